/*
 * stub_script_file.c — reads a script file whole (it is small) and parses it.
 * The size is checked before anything is allocated.
 */
#define _POSIX_C_SOURCE 200809L

#include "stub_script.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static adil_status read_whole_file(const char *path, char **data, size_t *len)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return adil_fail(ADIL_STATUS_IO, "stub script '%s': cannot open: %s", path, strerror(errno));
    struct stat info;
    adil_status st = ADIL_OK;
    if (fstat(fileno(file), &info) != 0)
        st = adil_fail(ADIL_STATUS_IO, "stub script '%s': cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(info.st_mode))
        st = adil_fail(ADIL_STATUS_IO, "stub script '%s': expected a regular file, got another kind of file", path);
    else if ((uint64_t)info.st_size > STUB_MAX_SCRIPT_BYTES)
        st = adil_fail(ADIL_STATUS_MODEL_FORMAT, "stub script '%s': expected at most %u bytes, got %llu",
                       path, STUB_MAX_SCRIPT_BYTES, (unsigned long long)info.st_size);
    if (st != ADIL_OK) {
        fclose(file);
        return st;
    }
    size_t size = (size_t)info.st_size;
    char *buf = malloc(size ? size : 1);
    if (buf == NULL) {
        fclose(file);
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "stub script '%s': could not allocate %zu bytes", path, size);
    }
    size_t got = fread(buf, 1, size, file);
    int read_error = ferror(file);
    fclose(file);
    /* A file that shrank between fstat and fread is refused, not half-read. */
    if (read_error || got != size) {
        free(buf);
        return adil_fail(ADIL_STATUS_IO, "stub script '%s': expected %zu bytes, read %zu", path, size, got);
    }
    *data = buf;
    *len = size;
    return ADIL_OK;
}

adil_status stub_script_load(const char *path, stub_script *out)
{
    memset(out, 0, sizeof *out);
    char *data = NULL;
    size_t len = 0;
    adil_status st = read_whole_file(path, &data, &len);
    if (st != ADIL_OK)
        return st;
    char what[512];
    snprintf(what, sizeof what, "stub script '%s'", path);
    st = stub_script_parse(data, len, what, out);
    free(data);
    return st;
}
