/* A hostile WASI guest in C (wasi-libc), built from source by the
 * differential test (__test__/wasi-differential.test.js) with Debian's clang
 * and wasi-libc, run by both WASI hosts, which must give the same errno for
 * every call, the same counters and the same budget outcome. Preopens: fd 3 =
 * /data (read), fd 4 = /out (readwrite), the world of fixture.js makeRoot()
 * and plantLinks(). Each call's errno (0 on success) is reported under a tag;
 * then the guest spins until its budget stops it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wasi/api.h>

__attribute__((import_module("host"), import_name("report"))) void host_report(const char *tag, int len, int value);

static void report(const char *tag, int value) { host_report(tag, (int)strlen(tag), value); }

/* The errno of a call that returns -1 on failure; closes what it opened. */
static void try_open(const char *tag, const char *path, int flags) {
  int fd = open(path, flags, 0644);
  report(tag, fd < 0 ? errno : 0);
  if (fd >= 0) close(fd);
}
#define TRY(tag, expr) report(tag, (expr) < 0 ? errno : 0)

int main(void) {
  char buf[64];
  struct stat st;
  /* item 5: a no-follow open is checked as what the runtime would open */
  try_open("c_nofollow_read_link_outside", "/data/link-to-secret", O_RDONLY | O_NOFOLLOW);
  try_open("c_follow_read_link_outside", "/data/link-to-secret", O_RDONLY);
  try_open("c_nofollow_trunc_link_into_read_grant", "/out/link-to-input", O_WRONLY | O_TRUNC | O_NOFOLLOW);
  try_open("c_nofollow_create_through_dangling", "/out/dang", O_WRONLY | O_CREAT | O_NOFOLLOW);
  try_open("c_nofollow_link_inside", "/out/link-to-own", O_WRONLY | O_NOFOLLOW);
  try_open("c_nofollow_excl_on_link", "/out/link-to-own", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW);
  try_open("c_create_through_intermediate_link", "/out/link-dir/x", O_WRONLY | O_CREAT);
  try_open("c_read_in_read_grant", "/data/input.txt", O_RDONLY);
  try_open("c_write_in_readwrite_grant", "/out/own.txt", O_WRONLY);
  TRY("c_stat_follow_link_outside", stat("/data/link-to-secret", &st));
  TRY("c_lstat_link", lstat("/data/link-to-secret", &st));
  TRY("c_readlink_absolute_target", readlink("/out/link-out", buf, sizeof buf));
  TRY("c_mkdir_through_intermediate_link", mkdir("/out/link-dir/inner", 0755));
  TRY("c_rename_out_through_link", rename("/out/own.txt", "/out/link-dir/stolen"));
  /* item 6: fd-level calls on the preopens */
  /* (the raw call: wasi-libc's futimens needs a compiler-rt builtin that
   * Debian ships in a separate package) */
  report("c_set_times_data_preopen", __wasi_fd_filestat_set_times(3, 0, 0, __WASI_FSTFLAGS_ATIM_NOW | __WASI_FSTFLAGS_MTIM_NOW));
  TRY("c_ftruncate_out_preopen", ftruncate(4, 0));
  TRY("c_write_data_preopen", write(3, "x", 1));
  TRY("c_fstat_data_preopen", fstat(3, &st));
  TRY("c_fsync_out_preopen", fsync(4));
  report("c_fallocate_out_preopen", posix_fallocate(4, 0, 1));
  TRY("c_write_unknown_fd", write(77, "x", 1));
  /* item 7: only the budget stops it */
  for (volatile unsigned long spin = 0;; spin++) {
  }
}
