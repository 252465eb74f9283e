// lt.h: the processes of a training run (train/world.h), for a program that
// trains under mpirun or srun as lt-train does: which rank reports, and how
// one rank's failure ends them all.
#include "api_internal.h"
#include "train/world.h"

lt_status lt_world_get(lt_world* world) {
  if (world) *world = lt_world{0, 1, 0};
  return lt::api::guarded([&] {
    lt::api::require(world, "world");
    const lt::World& w = lt::World::get();
    *world = lt_world{w.rank(), w.size(), w.local_rank()};
  });
}

void lt_world_abort(int status) {
  try {
    lt::World::get().abort(status);
  } catch (...) {  // no world to end (MPI could not start): this process alone
  }
  std::exit(status);
}
