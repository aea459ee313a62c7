/* LD_PRELOAD shim for the power-cut test (bench/powercut_test.py): logs every write, truncate
   and fdatasync/fsync that a process makes to the journal (journal.sqlite, its -wal) into the
   file named by $SYNCLOG, so the test can rebuild what a power cut would leave on the card:
   each file as of its last sync, every write after it lost. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <stdint.h>
#include <pthread.h>

static int logfd = -1;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int watched(int fd, char *name, size_t n) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(link, name, n - 1);
    if (k <= 0) return 0;
    name[k] = 0;
    const char *suffixes[] = {"journal.sqlite", "journal.sqlite-wal"};
    for (int i = 0; i < 2; i++) {
        size_t ls = strlen(suffixes[i]);
        if ((size_t)k >= ls && strcmp(name + k - ls, suffixes[i]) == 0) return 1;
    }
    return 0;
}

static void openlog_(void) {
    if (logfd >= 0) return;
    const char *p = getenv("SYNCLOG");
    if (!p) return;
    logfd = (int)syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_APPEND, 0600);
}

/* record: 'W' name\0 offset(8) len(8) data | 'S' name\0 | 'T' name\0 length(8) */
static void rec(char kind, const char *name, int64_t off, const void *buf, int64_t len) {
    pthread_mutex_lock(&mu);
    openlog_();
    if (logfd >= 0) {
        syscall(SYS_write, logfd, &kind, 1);
        syscall(SYS_write, logfd, name, strlen(name) + 1);
        if (kind == 'W') {
            syscall(SYS_write, logfd, &off, 8);
            syscall(SYS_write, logfd, &len, 8);
            syscall(SYS_write, logfd, buf, len);
        } else if (kind == 'T') {
            syscall(SYS_write, logfd, &off, 8);
        }
    }
    pthread_mutex_unlock(&mu);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = dlsym(RTLD_NEXT, "pwrite64");
    ssize_t r = real(fd, buf, n, off);
    char name[512];
    if (r > 0 && watched(fd, name, sizeof name)) rec('W', name, off, buf, r);
    return r;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) { return pwrite64(fd, buf, n, off); }

ssize_t write(int fd, const void *buf, size_t n) {
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) real = dlsym(RTLD_NEXT, "write");
    char name[512];
    if (fd <= 2 || !watched(fd, name, sizeof name)) return real(fd, buf, n);
    off_t off = lseek(fd, 0, SEEK_CUR);
    ssize_t r = real(fd, buf, n);
    if (r > 0) rec('W', name, off, buf, r);
    return r;
}

int ftruncate64(int fd, off_t len) {
    static int (*real)(int, off_t);
    if (!real) real = dlsym(RTLD_NEXT, "ftruncate64");
    int r = real(fd, len);
    char name[512];
    if (r == 0 && watched(fd, name, sizeof name)) rec('T', name, len, 0, 0);
    return r;
}
int ftruncate(int fd, off_t len) { return ftruncate64(fd, len); }

static int synced(int fd, int r) {
    char name[512];
    if (r == 0 && watched(fd, name, sizeof name)) rec('S', name, 0, 0, 0);
    return r;
}
int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = dlsym(RTLD_NEXT, "fsync");
    return synced(fd, real(fd));
}
int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = dlsym(RTLD_NEXT, "fdatasync");
    return synced(fd, real(fd));
}
