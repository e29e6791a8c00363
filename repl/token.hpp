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

// Creates the folder (0700) if needed and the file with mode 0600, replacing an old one
// (also fixing its mode). Throws std::runtime_error naming the path.
void write_token_file(const std::string& path, std::string_view token);

// The first line, trimmed. Throws std::runtime_error naming the path when it cannot be read.
std::string read_token_file(const std::string& path);

// Compares in time that depends only on the lengths, so timing tells nothing of the token.
bool tokens_equal(std::string_view a, std::string_view b);

}  // namespace tapestry::repl
