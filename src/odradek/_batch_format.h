/* The v2 record batch format as odradek's C extensions read it: header field positions and
 * attribute bits (the layout is documented in odradek/records/batch.py), big-endian reads, and
 * the zigzag varints of records (the rules of odradek/records/varint.py), and the calls to the
 * project's CRC32C and decompression.
 *
 * Header-only (static inline): each extension includes it. Every read expects its caller to
 * have checked the bounds it states; ``call_crc32c``, ``decompress_records`` and
 * ``import_attr`` (module init) are the helpers that touch Python objects.
 */
#ifndef ODRADEK_BATCH_FORMAT_H
#define ODRADEK_BATCH_FORMAT_H

#include <Python.h>
#include <stdint.h>

#define HEADER_SIZE 61
#define LOG_OVERHEAD 12
#define PARTITION_LEADER_EPOCH_OFFSET 12
#define MAGIC_OFFSET 16
#define CRC_OFFSET 17
#define ATTRIBUTES_OFFSET 21
#define LAST_OFFSET_DELTA_OFFSET 23
#define BASE_TIMESTAMP_OFFSET 27
#define MAX_TIMESTAMP_OFFSET 35
#define RECORDS_COUNT_OFFSET 57
#define COMPRESSION_MASK 0x07
#define TIMESTAMP_TYPE_BIT 0x08
#define CONTROL_BIT 0x20

/* ---- big-endian reads (the caller has checked the bounds) ---- */

static inline uint16_t
be16(const uint8_t *p)
{
    return (uint16_t)(((uint16_t)p[0] << 8) | p[1]);
}

static inline uint32_t
be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t
be64(const uint8_t *p)
{
    return ((uint64_t)be32(p) << 32) | be32(p + 4);
}

/* Two's complement reinterpretation without implementation-defined conversions. */
static inline int64_t
as_i64(uint64_t u)
{
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

static inline int32_t
as_i32(uint32_t u)
{
    return u <= (uint32_t)INT32_MAX ? (int32_t)u : -(int32_t)(~u) - 1;
}

/* ---- varints (zigzag; the rules of odradek/records/varint.py) ---- */

/* Decodes an unsigned base-128 number of at most ``max_bytes`` bytes from p[*pos .. end);
 * the byte at index max_bytes - 1 must not exceed ``last_limit``. Returns -1 (no exception
 * set) when the number is truncated or overlong, where varint.py raises. Longer-than-needed
 * encodings within the limits are accepted, as varint.py accepts them. */
static inline int
read_raw(const uint8_t *p, Py_ssize_t *pos, Py_ssize_t end, int max_bytes, unsigned last_limit,
         uint64_t *out)
{
    Py_ssize_t i = *pos;
    if (i < end && p[i] < 0x80) {
        *out = p[i];
        *pos = i + 1;
        return 0;
    }
    uint64_t raw = 0;
    int shift = 0;
    for (int index = 0; index < max_bytes; index++) {
        if (i >= end) {
            return -1;
        }
        uint8_t byte = p[i++];
        if (index == max_bytes - 1) {
            if (byte > last_limit) {
                return -1;
            }
            raw |= (uint64_t)byte << shift;
            break;
        }
        raw |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            break;
        }
        shift += 7;
    }
    *out = raw;
    *pos = i;
    return 0;
}

static inline int
read_varint(const uint8_t *p, Py_ssize_t *pos, Py_ssize_t end, int32_t *out)
{
    uint64_t raw;
    if (read_raw(p, pos, end, 5, 0x0F, &raw) < 0) {
        return -1;
    }
    /* raw < 2**32: the zigzag value is in the int32 range. */
    *out = (int32_t)(raw & 1 ? -(int64_t)(raw >> 1) - 1 : (int64_t)(raw >> 1));
    return 0;
}

static inline int
read_varlong(const uint8_t *p, Py_ssize_t *pos, Py_ssize_t end, int64_t *out)
{
    uint64_t raw;
    if (read_raw(p, pos, end, 10, 0x01, &raw) < 0) {
        return -1;
    }
    *out = raw & 1 ? -(int64_t)(raw >> 1) - 1 : (int64_t)(raw >> 1);
    return 0;
}

/* ---- CRC32C (computed by odradek.records.crc.crc32c, the project's one implementation) ---- */

/* Calls ``crc32c(view[start:end])`` and stores the result in *out. Returns 0, or -1 with the
 * callback's (or the slice's) exception set. */
static inline int
call_crc32c(PyObject *crc32c, PyObject *view, Py_ssize_t start, Py_ssize_t end, uint32_t *out)
{
    PyObject *covered = PySequence_GetSlice(view, start, end);
    if (covered == NULL) {
        return -1;
    }
    PyObject *crc = PyObject_CallOneArg(crc32c, covered);
    Py_DECREF(covered);
    if (crc == NULL) {
        return -1;
    }
    unsigned long actual = PyLong_AsUnsignedLong(crc);
    Py_DECREF(crc);
    if (actual == (unsigned long)-1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (uint32_t)actual;
    return 0;
}

/* The records of the compressed batch of ``size`` bytes at ``pos`` in ``view``: calls
 * ``decompress(codec, view[pos + HEADER_SIZE : pos + size])`` (odradek.records.compression)
 * and gets the buffer of its result into ``records``, which the caller releases
 * (PyBuffer_Release). Returns 0, or -1 with the exception set. */
static inline int
decompress_records(PyObject *decompress, PyObject *view, Py_ssize_t pos, Py_ssize_t size,
                   unsigned codec, Py_buffer *records)
{
    PyObject *codec_number = PyLong_FromUnsignedLong(codec);
    if (codec_number == NULL) {
        return -1;
    }
    PyObject *body = PySequence_GetSlice(view, pos + HEADER_SIZE, pos + size);
    if (body == NULL) {
        Py_DECREF(codec_number);
        return -1;
    }
    PyObject *data = PyObject_CallFunctionObjArgs(decompress, codec_number, body, NULL);
    Py_DECREF(codec_number);
    Py_DECREF(body);
    if (data == NULL) {
        return -1;
    }
    int rc = PyObject_GetBuffer(data, records, PyBUF_SIMPLE); /* holds its own reference */
    Py_DECREF(data);
    return rc;
}

/* ---- module init ---- */

/* A new reference to module.name (NULL with an exception set on failure). */
static inline PyObject *
import_attr(const char *module, const char *name)
{
    PyObject *mod = PyImport_ImportModule(module);
    if (mod == NULL) {
        return NULL;
    }
    PyObject *attr = PyObject_GetAttrString(mod, name);
    Py_DECREF(mod);
    return attr;
}

#endif /* ODRADEK_BATCH_FORMAT_H */
