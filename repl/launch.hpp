// `tapestry -n N`: runs `mpirun -n N tapestry ...` as a child and exits with rank 0's status.
//   if (ranks > 1 && !under_mpi) return run_under_mpirun(ranks, argc, argv, config.launch);
//   ...rank 0: install_exit_hook(L); ... return record_exit_status(status);
// Why not exec mpirun: with orte_abort_on_non_zero_status=0 (so a dying worker leaves rank 0
// alive to name it) Open MPI exits 0 whatever rank 0 returned. So the launcher names a file in
// TAPESTRY_EXIT_FILE, rank 0 writes its status there (on return and on os.exit), and the
// launcher exits with it; without one (rank 0 killed) it exits with mpirun's status.
#pragma once

#include <string>

#include "engine/comm/mpi.hpp"

struct lua_State;

namespace tapestry::repl {

// Runs the job and returns the status to exit with (2 when mpirun cannot be started).
int run_under_mpirun(int ranks, int argc, char** argv, const comm::LaunchEnv& env);

// Rank 0: remembers where to report (TAPESTRY_EXIT_FILE, removed from the environment so that
// a nested tapestry does not write there).
void take_exit_file();
// Writes `status` for the launcher, if it asked for it; returns status.
int record_exit_status(int status);
// Wraps os.exit so that it records its status first.
void install_exit_hook(lua_State* L);

}  // namespace tapestry::repl
