// --- lstm_cell.cu ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// One LSTM step over B rows of H units (lib/ops/lstm_cell.cpp's arithmetic):
// gates [B, 4H] (x W_ih^T + b_ih in, activated i f g o out), rec [B, 4H],
// c_prev, c, h [B, H]; h also into out + first, rows of out_cols. Rows with
// lengths[r] <= t get zero h and c.
void lstm_cell_forward(float* gates, const float* rec, const float* c_prev, const int32_t* lengths, int64_t t,
                       float* c, float* h, float* out, int64_t out_cols, int64_t first, int64_t B, int64_t H);
// Its gradient: dgates [B, 4H] from gates, c, c_prev, dh and dout + first;
// dc (from the next step) becomes the previous step's. Padded rows: zeros.
void lstm_cell_backward(const float* gates, const float* c, const float* c_prev, const float* dh, const float* dout,
                        int64_t dout_cols, int64_t first, const int32_t* lengths, int64_t t, float* dc, float* dgates,
                        int64_t B, int64_t H);
}  // namespace lt::kernels
