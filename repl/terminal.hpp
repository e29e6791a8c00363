// Rank 0 taking the terminal that mpirun was started from, so that `mpirun -n N tapestry` and
// `tapestry -n N` get the same interactive shell as one rank.
//   if (shell && !isatty(0) && take_launcher_terminal()) terminal = true;   // rank 0 only
// Under mpirun rank 0's standard streams are pipes to mpirun, and Ctrl-C at the terminal goes to
// mpirun, which ends the job. But Open MPI starts each rank in its own process group within
// mpirun's session, so rank 0 can open the controlling terminal, make its own group the
// terminal's foreground one and put the terminal on its descriptors 0, 1 and 2. Then libedit
// sees a terminal, Ctrl-C reaches rank 0 alone (which cancels the evaluation on every rank),
// and mpirun, in the background, stops reading the terminal (it reads standard input only in
// the foreground). The foreground goes back to mpirun's group at exit.
#pragma once

namespace tapestry::repl {

// Whether rank 0 now owns the terminal. Only when mpirun's own standard input is the
// controlling terminal and mpirun is in its foreground: input piped into mpirun stays piped.
bool take_launcher_terminal();

// Gives the foreground back (done at exit too); idempotent.
void give_back_terminal();

}  // namespace tapestry::repl
