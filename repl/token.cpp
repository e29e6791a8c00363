// Tokens come from getrandom(2), never from a seeded PRNG: whoever holds one can run any
// code as the server's user.
#include "repl/token.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "repl/shell_env.hpp"

namespace tapestry::repl {

namespace {

std::runtime_error file_error(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace

std::string new_token() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("no randomness for a token: ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  static const char hex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += hex[b >> 4];
    token += hex[b & 15];
  }
  return token;
}

std::string default_token_path() {
  const std::optional<std::string>& home = shell_env().home;
  if (!home || home->empty()) return {};
  return *home + "/.tapestry/serve.token";
}

void write_token_file(const std::string& path, std::string_view token) {
  if (const size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw file_error("cannot create the folder", dir);
  }
  // O_NOFOLLOW: a link planted at the path must not redirect the secret elsewhere.
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw file_error("cannot write the token file", path);
  std::string line(token);
  line += '\n';
  const bool ok =
      fchmod(fd, 0600) == 0 && write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  const int saved = errno;
  close(fd);
  errno = saved;
  if (!ok) throw file_error("cannot write the token file", path);
}

std::string read_token_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw file_error("cannot read the token file", path);
  char buf[256];
  ssize_t n = read(fd, buf, sizeof buf);
  const int saved = errno;
  close(fd);
  errno = saved;
  if (n < 0) throw file_error("cannot read the token file", path);
  std::string s(buf, static_cast<size_t>(n));
  s = s.substr(0, s.find_first_of("\r\n"));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

bool tokens_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace tapestry::repl
