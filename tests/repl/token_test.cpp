#include "repl/token.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

using namespace tapestry::repl;

namespace {

struct Dir {
  Dir() {
    std::string t = (std::filesystem::temp_directory_path() / "tapestry-token-XXXXXX").string();
    REQUIRE(::mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~Dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

std::string error_of(const std::string& path) {
  try {
    write_token_file(path, "t");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

std::string contents(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("repl.token.private_files") {
  Dir d;
  const std::string p = d.path + "/sub/token";  // the folder is made, mode 0700
  const FileId id = write_token_file(p, "secret");
  CHECK(contents(p) == "secret\n");
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat((d.path + "/sub").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(std::filesystem::directory_iterator(d.path + "/sub")->path() == p);  // no temporary left

  // Our own file is replaced; remove_own_file leaves a file some later writer put there.
  const FileId id2 = write_token_file(p, "again");
  CHECK(contents(p) == "again\n");
  remove_own_file(p, id);
  CHECK(std::filesystem::exists(p));
  remove_own_file(p, id2);
  CHECK_FALSE(std::filesystem::exists(p));

  // A link, a FIFO or a folder at the path is refused, and the link's target is untouched.
  std::ofstream(d.path + "/victim") << "precious";
  std::filesystem::create_symlink(d.path + "/victim", d.path + "/link");
  CHECK(error_of(d.path + "/link").find("not a regular file") != std::string::npos);
  CHECK(contents(d.path + "/victim") == "precious");
  REQUIRE(::mkfifo((d.path + "/fifo").c_str(), 0600) == 0);
  CHECK(error_of(d.path + "/fifo").find("not a regular file") != std::string::npos);

  if (::geteuid() == 0) {  // a file another user made in advance stays theirs, unwritten
    const std::string theirs = d.path + "/theirs";
    std::ofstream(theirs).close();
    REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
    CHECK(error_of(theirs).find("belongs to another user (uid 65534)") != std::string::npos);
    CHECK(contents(theirs).empty());
    std::filesystem::create_directory(d.path + "/their_dir");
    REQUIRE(::chown((d.path + "/their_dir").c_str(), 65534, 65534) == 0);
    CHECK(error_of(d.path + "/their_dir/token").find("refusing the folder") != std::string::npos);
  }
}
