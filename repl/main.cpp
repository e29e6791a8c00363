// tapestry: the shell and script runner. lua.c's main in outline: parse the command
// line, build the state, then -e chunks, the script, and the shell, all inside one
// protected call so that no Lua error escapes unprotected.
#include <lauxlib.h>
#include <lua.h>

#include <unistd.h>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "engine/comm/mpi.hpp"
#include "engine/session/calibrate.hpp"
#include "engine/session/config.hpp"
#include "engine/session/session.hpp"
#include "kernels/cpu/kernels.hpp"
#include "lang/api.hpp"
#include "lang/state.hpp"
#include "repl/cli.hpp"
#include "repl/connect.hpp"
#include "repl/launch.hpp"
#include "repl/progress_bar.hpp"
#include "repl/run.hpp"
#include "repl/serve.hpp"
#include "repl/shell.hpp"
#include "repl/terminal.hpp"

namespace {

using tapestry::repl::CliOptions;

constexpr const char* kProgname = "tapestry";

struct Main {
  const CliOptions* options;
  int argc;
  char** argv;
  int exit_status;
  const tapestry::repl::ServeOptions* serve = nullptr;  // `tapestry serve`
  bool terminal = false;  // the shell reads a terminal (rank 0's own, or the one mpirun was started from)
};

// Whether the command line ends in the interactive shell (lua.c's rule).
bool wants_shell(const CliOptions& o) {
  return o.subcommand.empty() && (o.interactive || (o.script.empty() && o.chunks.empty()));
}

// lua.c's createargtable: arg[0] is the script, arg[1..] its arguments, and the
// interpreter's own arguments get indices 0 and below (arg[0] = "tapestry" without a script).
void create_arg_table(lua_State* L, const CliOptions& o, int argc, char** argv) {
  int script = o.script_index;
  lua_createtable(L, argc - script - 1 > 0 ? argc - script - 1 : 0, script + 1);
  for (int i = 0; i < argc; ++i) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

int run(lua_State* L, Main& m) {
  using namespace tapestry::repl;
  const CliOptions& o = *m.options;
  if (m.serve != nullptr) return serve(L, *m.serve);
  create_arg_table(L, o, m.argc, m.argv);
  for (const std::string& chunk : o.chunks)
    if (run_string(L, chunk, "=(command line)", kProgname) != LUA_OK) return 1;
  if (!o.script.empty()) {
    std::vector<std::string> args;
    for (int i = o.script_index + 1; i < m.argc; ++i) args.emplace_back(m.argv[i]);
    const char* path = o.script_is_stdin ? nullptr : o.script.c_str();
    if (run_file(L, path, args, kProgname) != LUA_OK) return 1;
  }
  if (wants_shell(o)) return run_shell(L, m.terminal);
  return 0;
}

// The protected body: a C++ failure outside Lua (an internal bug) becomes a Lua error
// here, with its message, instead of an unexplained status.
int pmain(lua_State* L) {
  Main& m = *static_cast<Main*>(lua_touserdata(L, 1));
  bool failed = false;
  std::string what;
  try {
    m.exit_status = run(L, m);
  } catch (const std::exception& e) {
    failed = true;
    what = e.what();
  }
  if (failed) return luaL_error(L, "internal error: %s", what.c_str());
  return 0;
}

// Under mpirun every rank runs this binary. Ranks 1..N-1 are workers: they serve rank 0's
// plans and never look at the command line. Returns their exit status, or -1 on rank 0 and
// in a plain run (no MPI at all, so a plain start stays fast).
int start_mpi(tapestry::Session& session) {
  namespace comm = tapestry::comm;
  comm::Mpi* mpi = nullptr;
  try {
    mpi = comm::Mpi::start(session.config().mpi_launched);
  } catch (const std::exception& e) {
    fprintf(stderr, "%s: %s\n", kProgname, e.what());
    return 1;
  }
  if (!mpi) return -1;
  if (mpi->rank() == 0 && !session.config().job.empty()) {
    // The head of a driver's job (engine/dist/head.hpp): no Lua here, the driver has it.
    try {
      return session.serve_driver(*mpi);
    } catch (const std::exception& e) {
      fprintf(stderr, "%s: rank 0: %s\n", kProgname, e.what());
      comm::Mpi::finish(true);
      return 1;
    }
  }
  if (mpi->rank() == 0) {
    unsetenv("TAPESTRY_RELAUNCHED");  // a script's own `tapestry -n` may launch again
    session.start_coordinator(*mpi);
    return -1;
  }
  try {
    const int status = session.serve(*mpi);
    comm::Mpi::finish(false);
    return status;
  } catch (const std::exception& e) {
    fprintf(stderr, "%s: rank %d: %s\n", kProgname, mpi->rank(), e.what());
    comm::Mpi::finish(true);
    return 1;
  }
}

// --calibrate: every rank measures (under mpirun ranks 0 and 1 also ping-pong), rank 0 writes
// the cache and prints the rates. No coordinator: the job is only this.
int calibrate_command(tapestry::Session& session) {
  namespace comm = tapestry::comm;
  try {
    comm::Mpi* mpi = comm::Mpi::start(session.config().mpi_launched);
    std::optional<tapestry::plan::Link> link;
    if (mpi && mpi->size() > 1) {
      bool measured = false;
      const tapestry::plan::Link l = tapestry::ping_pong(*mpi, &measured);
      if (measured) link = l;
    }
    // Only rank 0 measures compute and memory: the others would share its cores meanwhile.
    if (!mpi || mpi->rank() == 0) {
      const tapestry::MachineRates& r = session.recalibrate(link);
      printf("%s\ncached in %s\n", tapestry::to_string(r).c_str(),
             tapestry::rates_cache_file(session.config().cache_dir).c_str());
    }
    if (mpi) comm::Mpi::finish(false);
    return 0;
  } catch (const std::exception& e) {
    fprintf(stderr, "%s: --calibrate: %s\n", kProgname, e.what());
    comm::Mpi::finish(true);
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tapestry::repl;
  // The process's one session: rank 0's (or a plain run's) works for the shell and scripts, a
  // worker's serves rank 0. Ended before exit handlers run: its device pieces go first.
  tapestry::Session session(tapestry::Config::from_environment());
  // TAPESTRY_DEVICE=cuda with no GPU fails here, on every rank, before MPI starts. Unset, the
  // GPU probe waits until a plan or tp.mesh() needs it (start-up stays free of the driver).
  if (!session.config().device.empty()) {
    if (const std::string& err = session.device_selection().error; !err.empty()) {
      fprintf(stderr, "%s: %s\n", kProgname, err.c_str());
      return 2;
    }
  }
  // Workers never read the command line but for the memory budget, which each rank enforces,
  // and the spill directory, where each rank spills what passes it.
  if (const CliResult pre = parse_cli(argc, argv); pre.error.empty()) {
    if (pre.options.memory_per_rank >= 0) session.set_memory_per_rank(pre.options.memory_per_rank);
    if (!pre.options.spill_dir.empty()) session.set_spill_dir(pre.options.spill_dir);
  }
  if (const CliResult pre = parse_cli(argc, argv);
      pre.error.empty() && pre.options.calibrate && (pre.options.ranks == 1 || session.config().mpi_launched))
    return calibrate_command(session);
  // Under `mpirun -n N tapestry ...` with a driver (the default), rank 0 is the driver: it keeps
  // the Lua state and launches an N-rank job of its own that it can replace when a process of
  // it is lost (engine/dist/remote_job.hpp). This job's other ranks have nothing to do.
  const tapestry::Config& config = session.config();
  const bool outer_driver = config.mpi_launched && config.job.empty() && config.driver;
  if (outer_driver && config.world_rank != 0) return 0;
  if (!outer_driver)
    if (const int worker_status = start_mpi(session); worker_status >= 0) return worker_status;
  CliResult cli = parse_cli(argc, argv);
  const CliOptions& o = cli.options;
  if (!cli.error.empty()) {
    fprintf(stderr, "%s: %s\n%s", kProgname, cli.error.c_str(), usage_text().c_str());
    return 2;
  }
  if (o.help) {
    fputs(usage_text().c_str(), stdout);
    return 0;
  }
  if (o.version) {
    printf("%s\nCPU kernels: %s\n", version_text().c_str(), tapestry::cpu::isa_name(tapestry::cpu::isa()));
    return 0;
  }
  if (o.reference) {
    fputs(tapestry::reference_markdown().c_str(), stdout);
    return 0;
  }
  if (o.subcommand == "connect") return connect_command(o.subcommand_args);
  ServeOptions serve_options;
  if (o.subcommand == "serve") {
    if (const int status = prepare_serve(o.subcommand_args, serve_options); status >= 0) return status;
    cli.options.ranks = serve_options.ranks;  // serve -n N restarts under mpirun as -n N does
  }
  if (o.memory_per_rank >= 0) session.set_memory_per_rank(o.memory_per_rank);
  if (o.shrink) session.set_shrink(true);
  if (!o.checkpoint_dir.empty() || o.checkpoint_every > 0) {
    if (o.checkpoint_every > 0 && o.checkpoint_dir.empty() && session.config().checkpoint_dir.empty()) {
      fprintf(stderr, "%s: --checkpoint-every needs --checkpoint-dir DIR\n", kProgname);
      return 2;
    }
    session.set_checkpoints(
        o.checkpoint_dir.empty() ? session.config().checkpoint_dir : o.checkpoint_dir,
        o.checkpoint_every > 0 ? o.checkpoint_every : session.config().checkpoint_every_min);
  }
  if (outer_driver && o.ranks != 1 && o.ranks != config.world_size) {
    fprintf(stderr, "%s: -n %d, but the MPI job has %d ranks\n", kProgname, o.ranks, config.world_size);
    return 2;
  }
  if (const int ranks = outer_driver ? config.world_size : o.ranks;
      ranks > 1 && config.driver && (outer_driver || !config.mpi_launched)) {
    std::vector<std::string> args;
    if (o.memory_per_rank >= 0) args = {"--memory-per-rank", std::to_string(o.memory_per_rank)};
    if (!o.spill_dir.empty()) {
      session.set_spill_dir(o.spill_dir);
      args.insert(args.end(), {"--spill-dir", o.spill_dir});
    }
    try {
      session.start_remote_job(ranks, std::move(args));
    } catch (const std::exception& e) {
      fprintf(stderr, "%s: %s\n", kProgname, e.what());
      return 1;
    }
  } else if (const int job = session.mpi_job_ranks(); o.ranks != 1 && job == 0) {
    // Not under mpirun yet: run `mpirun -n N tapestry args...` and exit with rank 0's status.
    return run_under_mpirun(o.ranks, argc, argv, session.config().launch);
  } else if (o.ranks != 1 && o.ranks != job) {
    fprintf(stderr, "%s: -n %d, but the MPI job has %d ranks\n", kProgname, o.ranks, job);
    return 2;
  }
  // Rank 0 of a job: the shell gets the terminal mpirun was started from, if it was.
  bool terminal = isatty(STDIN_FILENO) != 0;
  if (config.mpi_launched) {
    take_exit_file();
    if (!terminal && wants_shell(o)) terminal = take_launcher_terminal();
  }

  lua_State* L = nullptr;
  try {
    L = tapestry::new_tapestry_state(session);
  } catch (const std::exception& e) {
    fprintf(stderr, "%s: cannot start: %s\n", kProgname, e.what());
    return 1;
  }
  if (L == nullptr) {
    fprintf(stderr, "%s: cannot create the Lua state: not enough memory\n", kProgname);
    return 1;
  }
  install_exit_hook(L);
  // Under mpirun stdout is Open MPI's pty even in a pipe: there only TAPESTRY_PROGRESS=1 shows it,
  // unless rank 0 took the terminal.
  const bool drawn = isatty(STDOUT_FILENO) != 0 && (!config.mpi_launched || (terminal && wants_shell(o)));
  if (progress_wanted(drawn) && o.subcommand.empty()) install_progress_bar(session.telemetry());
  Main m{&o, argc, argv, 0, o.subcommand == "serve" ? &serve_options : nullptr, terminal};
  lua_pushcfunction(L, pmain);
  lua_pushlightuserdata(L, &m);
  int status = lua_pcall(L, 1, 0, 0);
  report(L, status, kProgname);
  lua_close(L);
  status = status == LUA_OK ? m.exit_status : 1;
  // A rank lost on the way fails the run, however the script ended.
  if (const tapestry::Job* job = session.coordinator(); job && !job->broken().empty()) {
    fprintf(stderr, "%s: %s\n", kProgname, job->broken().c_str());
    if (status == 0) status = 1;
  }
  give_back_terminal();
  return record_exit_status(status);
}
