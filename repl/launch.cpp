// Both ends of the exit-status file: the launcher (fork mpirun, wait, read) and rank 0 (write).
#include "repl/launch.hpp"

#include <lauxlib.h>
#include <lua.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "repl/shell_env.hpp"

namespace tapestry::repl {

namespace {

pid_t g_child = 0;        // mpirun, for the signal forwarder
std::string g_exit_file;  // rank 0: where to write its status
bool g_recorded = false;  // written once: the first status is the one that counts

void forward(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

// The status rank 0 wrote, or -1.
int read_status(const std::string& path) {
  FILE* f = fopen(path.c_str(), "r");
  if (!f) return -1;
  int status = -1;
  if (fscanf(f, "%d", &status) != 1) status = -1;
  fclose(f);
  return status;
}

// lua.c's os.exit(code): true is success, false failure, else the integer (default true).
int exit_hook(lua_State* L) {
  int status = EXIT_SUCCESS;
  if (lua_isboolean(L, 1)) status = lua_toboolean(L, 1) ? EXIT_SUCCESS : EXIT_FAILURE;
  else if (!lua_isnoneornil(L, 1)) status = static_cast<int>(luaL_checkinteger(L, 1));
  record_exit_status(status);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// Whether every child process of `parent` that ever ran has exited (gone or a zombie); `seen`
// remembers that one ran, so the time before mpirun starts the ranks does not count.
bool children_exited(pid_t parent, bool& seen) {
  DIR* proc = opendir("/proc");
  if (!proc) return false;
  bool alive = false;
  while (dirent* e = readdir(proc)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    FILE* f = fopen((std::string("/proc/") + e->d_name + "/stat").c_str(), "r");
    if (!f) continue;
    char line[512] = "";
    const bool read = fgets(line, sizeof line, f) != nullptr;
    fclose(f);
    const char* close = read ? strrchr(line, ')') : nullptr;
    char state = 0;
    int ppid = 0;
    if (!close || sscanf(close + 1, " %c %d", &state, &ppid) != 2 || ppid != parent) continue;
    if (state != 'Z' && state != 'X') alive = true;
  }
  closedir(proc);
  seen = seen || alive;
  return seen && !alive;
}

// Waits for mpirun. Once every rank it started has exited, it has nothing left to wait for, but
// when one failed it still runs its kill sequence, sleeping odls_base_sigkill_timeout (10 s here)
// twice: after a grace it is ended, so a lost rank ends `tapestry -n` in seconds.
void wait_for_mpirun(pid_t child, int& wstatus) {
  using Clock = std::chrono::steady_clock;
  bool seen = false;
  bool exited = false;  // every rank has exited, since exited_at
  Clock::time_point exited_at{};
  for (;;) {
    const pid_t r = waitpid(child, &wstatus, WNOHANG);
    if (r == child || (r < 0 && errno != EINTR)) return;
    if (!children_exited(child, seen)) {
      exited = false;
    } else if (!exited) {
      exited = true;
      exited_at = Clock::now();
    } else if (Clock::now() - exited_at > std::chrono::seconds(2)) {
      kill(child, SIGKILL);
    }
    usleep(50'000);
  }
}

}  // namespace

int run_under_mpirun(int ranks, int argc, char** argv, const comm::LaunchEnv& env) {
  std::string why;
  std::vector<std::string> args = comm::mpirun_command(ranks, argc, argv, env, why);
  if (args.empty()) {
    fprintf(stderr, "tapestry: %s\n", why.c_str());
    return 2;
  }
  std::string path = shell_env().tmpdir + "/tapestry-exit-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) path.clear();
  else close(fd), setenv("TAPESTRY_EXIT_FILE", path.c_str(), 1);
  setenv("TAPESTRY_RELAUNCHED", "1", 1);
  // A worker that dies must not take rank 0 down before it reports it (it aborts itself).
  setenv("OMPI_MCA_orte_abort_on_non_zero_status", "0", 0);
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  fflush(nullptr);
  g_child = fork();
  if (g_child < 0) {
    fprintf(stderr, "tapestry: cannot start %s: %s\n", args[0].c_str(), std::strerror(errno));
    if (!path.empty()) unlink(path.c_str());
    return 2;
  }
  if (g_child == 0) {
    execv(cargs[0], cargs.data());
    fprintf(stderr, "tapestry: cannot run %s: %s\n", cargs[0], std::strerror(errno));
    _exit(2);
  }
  // As system(3) does: Ctrl-C and Ctrl-\ at the terminal reach mpirun too, which handles them;
  // a kill aimed at us is passed on.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  struct sigaction pass = {};
  pass.sa_handler = forward;
  sigemptyset(&pass.sa_mask);
  for (int sig : {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) sigaction(sig, &pass, nullptr);
  int wstatus = 0;
  wait_for_mpirun(g_child, wstatus);
  int status = path.empty() ? -1 : read_status(path);
  if (!path.empty()) unlink(path.c_str());
  if (status >= 0) return status;
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1;
}

void take_exit_file() {
  g_exit_file = shell_env().exit_file;
  unsetenv("TAPESTRY_EXIT_FILE");
}

int record_exit_status(int status) {
  if (g_exit_file.empty() || g_recorded) return status;
  g_recorded = true;
  if (FILE* f = fopen(g_exit_file.c_str(), "w")) {
    fprintf(f, "%d\n", status);
    fclose(f);
  }
  return status;
}

void install_exit_hook(lua_State* L) {
  lua_getglobal(L, "os");
  if (!lua_istable(L, -1)) return lua_pop(L, 1);
  lua_getfield(L, -1, "exit");
  lua_pushcclosure(L, exit_hook, 1);
  lua_setfield(L, -2, "exit");
  lua_pop(L, 1);
}

}  // namespace tapestry::repl
