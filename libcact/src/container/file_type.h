#pragma once
// What a non-regular file is, for messages that refuse it ("not a regular file
// (a FIFO)"): the user sees why a path that exists was still not accepted.
#include <sys/stat.h>

namespace cact {

inline const char* file_type_name(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a file";
}

}  // namespace cact
