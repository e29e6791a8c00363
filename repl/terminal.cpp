#include "repl/terminal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace tapestry::repl {

namespace {

int g_tty = -1;
pid_t g_previous = -1;  // the foreground group before us: mpirun's

// tcsetpgrp from a background group raises SIGTTOU unless it is blocked.
bool set_foreground(int tty, pid_t group) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTTOU);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  const bool ok = tcsetpgrp(tty, group) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

// The controlling terminal's device (/proc/self/stat's tty_nr), or 0: opened, /dev/tty says
// only that it is "the controlling terminal".
dev_t controlling_terminal() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 1));
  std::string state;
  long ppid = 0, pgrp = 0, session = 0, tty_nr = 0;
  if (!(rest >> state >> ppid >> pgrp >> session >> tty_nr) || tty_nr == 0) return 0;
  return makedev((tty_nr >> 8) & 0xfff, (tty_nr & 0xff) | ((tty_nr >> 12) & 0xfff00));
}

}  // namespace

bool take_launcher_terminal() {
  if (g_tty >= 0) return true;
  const int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (tty < 0) return false;  // no controlling terminal: a batch job, or a rank on another node
  struct stat launcher = {};
  const pid_t parent = getppid();
  const std::string launcher_stdin = "/proc/" + std::to_string(parent) + "/fd/0";
  const pid_t fg = tcgetpgrp(tty);
  const dev_t mine = controlling_terminal();
  const bool same = mine != 0 && stat(launcher_stdin.c_str(), &launcher) == 0 && S_ISCHR(launcher.st_mode) &&
                    launcher.st_rdev == mine;
  // Input piped into mpirun, or mpirun started in the background: leave things as they are.
  if (!same || fg < 0 || fg != getpgid(parent)) {
    close(tty);
    return false;
  }
  if (getpgrp() == fg && setpgid(0, 0) != 0) {  // a launcher that keeps its ranks in its group
    close(tty);
    return false;
  }
  if (!set_foreground(tty, getpgrp())) {
    close(tty);
    return false;
  }
  g_tty = tty;
  g_previous = fg;
  std::atexit(give_back_terminal);
  // Ctrl-Z would stop rank 0 alone, in a group the launching shell does not know about.
  signal(SIGTSTP, SIG_IGN);
  for (int fd = 0; fd <= 2; ++fd) dup2(tty, fd);
  return true;
}

void give_back_terminal() {
  if (g_tty < 0) return;
  set_foreground(g_tty, g_previous);
  close(g_tty);
  g_tty = -1;
}

}  // namespace tapestry::repl
