// The secret a client must present to `tapestry serve`: 32 random bytes as 64 hex digits,
// kept in a file only its owner can read (mode 0600, in a 0700 folder).
//   std::string t = new_token();                        // from the kernel's CSPRNG
//   write_token_file(default_token_path(), t);          // ~/.tapestry/serve.token
//   tokens_equal(read_token_file(path), t)              // constant time
#pragma once

#include <string>
#include <string_view>

namespace tapestry::repl {

// Throws std::runtime_error when the kernel gives no randomness.
std::string new_token();

// ~/.tapestry/serve.token (empty when there is no $HOME).
std::string default_token_path();

// Writes `text` to `path` so that no one else can read it or redirect it: into a temporary
// created O_EXCL | O_NOFOLLOW with `mode` beside it, then renamed over `path` (a link there is
// replaced, never followed). An existing path that is not a regular file, or that another user
// owns (they could read it, or made it to catch the secret), is refused; so is a folder owned
// by another user. Creates the folder (0700) when missing. Throws std::runtime_error naming the
// path. Returns the file's identity, for remove_own_file.
struct FileId {
  unsigned long long dev = 0, ino = 0;
};
FileId write_private_file(const std::string& path, std::string_view text, unsigned mode);

// Removes `path` if it is still the file written as `id` (not one a later server wrote).
void remove_own_file(const std::string& path, FileId id);

// The token plus a newline, mode 0600 (write_private_file).
FileId write_token_file(const std::string& path, std::string_view token);

// The first line, trimmed. Throws std::runtime_error naming the path when it cannot be read.
std::string read_token_file(const std::string& path);

// Compares in time that depends only on the lengths, so timing tells nothing of the token.
bool tokens_equal(std::string_view a, std::string_view b);

}  // namespace tapestry::repl
