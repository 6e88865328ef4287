/*
 * files.c — opening the one file a model is made of (a GGUF file, a stub
 * script) without blocking, refusing anything but a regular file, and the
 * identity that tells later whether the file changed.
 *
 * open() of a FIFO with no writer blocks for ever, and a directory opens
 * fine and then "has" a size of 2^63 - 1 bytes through fseek/ftell.  So the
 * file is opened with O_NONBLOCK (which a FIFO's open honours), its kind is
 * read with fstat on the descriptor, and only then is O_NONBLOCK cleared.
 */
#define _POSIX_C_SOURCE 200809L

#include "adil_common.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "a directory", "a named pipe (FIFO)", ... for the message. */
static const char *file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

static void identity(const struct stat *sb, adil_file_id *id) {
    id->size = (uint64_t)sb->st_size;
    id->mtime_sec = (int64_t)sb->st_mtim.tv_sec;
    id->mtime_nsec = (int64_t)sb->st_mtim.tv_nsec;
}

static int clear_nonblock(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

adil_status adil_open_regular_file(const char *path, const char *what, int *fd, adil_file_id *id) {
    *fd = -1;
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (f < 0) return adil_fail(ADIL_STATUS_IO, "%s: cannot open '%s': %s", what, path, strerror(errno));
    struct stat sb;
    adil_status st = ADIL_OK;
    if (fstat(f, &sb) != 0)
        st = adil_fail(ADIL_STATUS_IO, "%s: cannot stat '%s': %s", what, path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = adil_fail(ADIL_STATUS_IO, "%s: '%s': expected a regular file, got %s", what, path,
                       file_kind(sb.st_mode));
    else if (clear_nonblock(f) != 0)
        st = adil_fail(ADIL_STATUS_IO, "%s: cannot read '%s' blocking: %s", what, path, strerror(errno));
    if (st != ADIL_OK) {
        close(f);
        return st;
    }
    identity(&sb, id);
    *fd = f;
    return ADIL_OK;
}

adil_status adil_file_id_now(int fd, const char *path, adil_file_id *id) {
    struct stat sb;
    if (fstat(fd, &sb) != 0) return adil_fail(ADIL_STATUS_IO, "cannot stat '%s': %s", path, strerror(errno));
    identity(&sb, id);
    return ADIL_OK;
}

bool adil_file_id_equal(const adil_file_id *a, const adil_file_id *b) {
    return a->size == b->size && a->mtime_sec == b->mtime_sec && a->mtime_nsec == b->mtime_nsec;
}

adil_status adil_read_fd(int fd, const char *path, const char *what, void *buf, size_t size) {
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, (char *)buf + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return adil_fail(ADIL_STATUS_IO, "%s: cannot read '%s': %s", what, path, strerror(errno));
        if (n == 0) /* the file shrank since fstat: refused, not half-read */
            return adil_fail(ADIL_STATUS_IO, "%s: '%s': expected %zu bytes, read %zu", what, path, size, got);
        got += (size_t)n;
    }
    return ADIL_OK;
}
