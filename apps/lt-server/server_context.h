// What every session reaches: the options, the models, the compute thread,
// the file worker, the limits, the keys, the metrics and the page. Owned by
// the Server; sessions hold a reference for their whole life (the Server
// outlives its io_context's handlers).
#pragma once
#include <atomic>

#include "auth.h"
#include "compute_loop.h"
#include "file_transcription.h"
#include "limits.h"
#include "metrics.h"
#include "models.h"
#include "server_options.h"
#include "web_files.h"

namespace lt::server {

struct ServerContext {
  const ServerOptions& options;
  Models& models;
  ComputeLoop& compute;
  FileTranscriber& files;
  Metrics& metrics;
  RateLimiter& rate;
  Slots& connections;
  Slots& streams;
  Auth& auth;
  const WebFiles& web;
  std::atomic<bool> draining{false};
  std::atomic<int64_t> busy{0};  // requests being answered and WebSocket sessions open: a drain waits for 0
};

// A client connection for as long as it is open (moved from the HTTP
// session to a WebSocket session on upgrade): its slot under
// --max-connections (none for one over the limit, which is answered 503)
// and the connections gauge.
class ConnectionHold {
 public:
  ConnectionHold(Metrics& metrics, Slots* slot) : metrics_(&metrics), slot_(slot) { metrics_->connections.fetch_add(1); }
  ConnectionHold(ConnectionHold&& o) noexcept : metrics_(o.metrics_), slot_(std::move(o.slot_)) { o.metrics_ = nullptr; }
  ConnectionHold(const ConnectionHold&) = delete;
  ConnectionHold& operator=(const ConnectionHold&) = delete;
  ConnectionHold& operator=(ConnectionHold&&) = delete;
  ~ConnectionHold() {
    if (metrics_) metrics_->connections.fetch_sub(1);
  }

 private:
  Metrics* metrics_;
  SlotHold slot_;
};

// Counts a request or session in ServerContext::busy while it lives.
class BusyHold {
 public:
  explicit BusyHold(std::atomic<int64_t>& busy) : busy_(&busy) { busy_->fetch_add(1); }
  BusyHold(BusyHold&& o) noexcept : busy_(o.busy_) { o.busy_ = nullptr; }
  BusyHold(const BusyHold&) = delete;
  BusyHold& operator=(const BusyHold&) = delete;
  BusyHold& operator=(BusyHold&&) = delete;
  ~BusyHold() {
    if (busy_) busy_->fetch_sub(1);
  }

 private:
  std::atomic<int64_t>* busy_;
};

}  // namespace lt::server
