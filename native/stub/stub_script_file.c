/*
 * stub_script_file.c — reads a script file whole (it is small) and parses it.
 * Only a regular file is read (a FIFO or a directory is refused at once, see
 * adil_open_regular_file); the size is checked before anything is allocated.
 */
#define _POSIX_C_SOURCE 200809L

#include "stub_script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* `what` ("stub script '<path>'") starts the messages that do not name the path. */
static adil_status read_whole_file(const char *path, const char *what, char **data, size_t *len) {
    int fd = -1;
    adil_file_id id;
    adil_status st = adil_open_regular_file(path, "stub script", &fd, &id);
    if (st != ADIL_OK) return st;
    if (id.size > STUB_MAX_SCRIPT_BYTES) {
        close(fd);
        return adil_fail(ADIL_STATUS_MODEL_FORMAT, "%s: expected at most %u bytes, got %llu", what,
                         STUB_MAX_SCRIPT_BYTES, (unsigned long long)id.size);
    }
    size_t size = (size_t)id.size;
    char *buf = malloc(size ? size : 1);
    if (buf == NULL) {
        close(fd);
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "%s: could not allocate %zu bytes", what, size);
    }
    /* A file that shrank since it was opened is refused, not half-read. */
    st = adil_read_fd(fd, path, "stub script", buf, size);
    close(fd);
    if (st != ADIL_OK) {
        free(buf);
        return st;
    }
    *data = buf;
    *len = size;
    return ADIL_OK;
}

adil_status stub_script_load(const char *path, stub_script *out) {
    memset(out, 0, sizeof *out);
    char what[512];
    snprintf(what, sizeof what, "stub script '%s'", path);
    char *data = NULL;
    size_t len = 0;
    adil_status st = read_whole_file(path, what, &data, &len);
    if (st != ADIL_OK) return st;
    st = stub_script_parse(data, len, what, out);
    free(data);
    return st;
}
