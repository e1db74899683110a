/* odradek._columns: the compiled ColumnBuilder (see odradek/records/columns.py).
 *
 * Decodes v2 record batches column-wise into growing C buffers and hands them out as the
 * ``Columns`` dataclass of odradek.records.columns. It behaves exactly like
 * ``PyColumnBuilder``, the Python reference: the same batches skipped, the same records kept,
 * the same bytes out, and the same exceptions for every malformed input.
 *
 * What stays in Python (called back once per batch, never per record): anything unusual about
 * a batch header (``batch.parse_header`` raises the error the reference raises), the CRC32C
 * (``crc.crc32c``; ``batch.validate_batch`` raises on a mismatch), decompression
 * (``compression.decompress``), and the error for a batch whose records are malformed or whose
 * codec is unknown: the loop below makes every check of the record format's reference
 * (``records.record_format``) and, at the first that fails, hands the batch to
 * ``columns.reference_error``, which raises the reference's own error for it. Non-ASCII header
 * keys are checked for UTF-8 by CPython's decoder, as the reference's ``bytes.decode`` does.
 *
 * Safety: the input is untrusted network bytes. Every read is bounds-checked against the end
 * of its record (or of the records section for a record's length); lengths are read into
 * locals once, so content changed by another thread during a callback cannot break a bound.
 * The GIL is held throughout; a builder refuses a second call while one is running (a
 * callback may let another thread in). Offsets and timestamps are computed in 128 bits, so no
 * signed overflow can happen; an out-of-range value that would be kept raises OverflowError
 * as the reference's int64 arrays do. Column data is bounded by int32 offsets: a column that
 * would pass 2**31-1 bytes raises OverflowError before the record is added.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_batch_format.h"

#ifndef __SIZEOF_INT128__
#error "odradek._columns needs a compiler with 128-bit integers (gcc, clang)"
#endif
typedef __int128 wide;


/* Python objects imported once at module init (strong references, never released: the
 * module is single-phase and lives as long as the interpreter). */
static PyObject *Columns;             /* odradek.records.columns.Columns */
static PyObject *parse_header;        /* odradek.records.batch.parse_header */
static PyObject *validate_batch;      /* odradek.records.batch.validate_batch */
static PyObject *reference_error;     /* odradek.records.columns.reference_error */
static PyObject *decompress;          /* odradek.records.compression.decompress */
static PyObject *crc32c;              /* odradek.records.crc.crc32c */
static PyObject *CorruptRecordError;  /* odradek.errors.CorruptRecordError */

/* The most bytes one column's data may hold (int32 offsets); lowered by tests only. */
static Py_ssize_t max_column_bytes = INT32_MAX;

/* ---- growable byte buffers ---- */

typedef struct {
    uint8_t *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} Buf;

static int
buf_reserve(Buf *b, Py_ssize_t extra)
{
    if (extra <= b->cap - b->len) {
        return 0;
    }
    if (extra > PY_SSIZE_T_MAX - b->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t need = b->len + extra;
    Py_ssize_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        cap = cap > PY_SSIZE_T_MAX / 2 ? need : cap * 2;
    }
    uint8_t *data = PyMem_Realloc(b->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static void
buf_free(Buf *b)
{
    PyMem_Free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* Little-endian appends; the caller has reserved the room. */
static inline void
put_le32(Buf *b, uint32_t v)
{
    uint8_t *p = b->data + b->len;
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
    b->len += 4;
}

static inline void
put_le64(Buf *b, uint64_t v)
{
    put_le32(b, (uint32_t)v);
    put_le32(b, (uint32_t)(v >> 32));
}

static PyObject *
buf_bytes(const Buf *b)
{
    return PyBytes_FromStringAndSize((const char *)b->data, b->len);
}

/* ---- binary columns: validity bitmap (built lazily), int32 offsets, data ---- */

typedef struct {
    Buf validity; /* used only once has_validity: (n + 7) / 8 bytes, padding bits clear */
    Buf offsets;  /* int32 LE x (n + 1) */
    Buf data;
    Py_ssize_t n;
    int has_validity;
} Binary;

static int
binary_init(Binary *c)
{
    memset(c, 0, sizeof(*c));
    if (buf_reserve(&c->offsets, 4) < 0) {
        return -1;
    }
    put_le32(&c->offsets, 0);
    return 0;
}

static void
binary_free(Binary *c)
{
    buf_free(&c->validity);
    buf_free(&c->offsets);
    buf_free(&c->data);
}

/* Whether ``len`` more bytes fit the column (int32 offsets); raises OverflowError if not. */
static int
binary_check_room(const Binary *c, Py_ssize_t len, const char *what)
{
    if (len > max_column_bytes - c->data.len) {
        PyErr_Format(PyExc_OverflowError,
                     "the %s column would exceed %zd bytes (its offsets are int32)", what,
                     max_column_bytes);
        return -1;
    }
    return 0;
}

/* Appends one item (``len`` < 0: null); the room was checked with binary_check_room. */
static int
binary_append(Binary *c, const uint8_t *p, Py_ssize_t len)
{
    Py_ssize_t i = c->n;
    if (len > max_column_bytes - c->data.len) {
        PyErr_Format(PyExc_OverflowError, "a column would exceed %zd bytes", max_column_bytes);
        return -1;
    }
    if (len < 0 && !c->has_validity) {
        /* The first null: every item before it was valid. */
        Py_ssize_t nbytes = (i + 7) / 8;
        if (buf_reserve(&c->validity, nbytes + 1) < 0) {
            return -1;
        }
        memset(c->validity.data, 0xFF, (size_t)(i / 8));
        if (i % 8) {
            c->validity.data[i / 8] = (uint8_t)((1u << (i % 8)) - 1);
        }
        c->validity.len = nbytes;
        c->has_validity = 1;
    }
    if (buf_reserve(&c->offsets, 4) < 0) {
        return -1;
    }
    if (c->has_validity) {
        if (i % 8 == 0) {
            if (buf_reserve(&c->validity, 1) < 0) {
                return -1;
            }
            c->validity.data[c->validity.len++] = 0;
        }
        if (len >= 0) {
            c->validity.data[i / 8] |= (uint8_t)(1u << (i % 8));
        }
    }
    if (len > 0) {
        if (buf_reserve(&c->data, len) < 0) {
            return -1;
        }
        memcpy(c->data.data + c->data.len, p, (size_t)len);
        c->data.len += len;
    }
    put_le32(&c->offsets, (uint32_t)c->data.len);
    c->n = i + 1;
    return 0;
}

/* Sets *validity, *offsets, *data to new references (validity Py_None without nulls). */
static int
binary_objects(const Binary *c, PyObject **validity, PyObject **offsets, PyObject **data)
{
    *validity = c->has_validity ? buf_bytes(&c->validity) : Py_NewRef(Py_None);
    *offsets = buf_bytes(&c->offsets);
    *data = buf_bytes(&c->data);
    if (*validity == NULL || *offsets == NULL || *data == NULL) {
        Py_CLEAR(*validity);
        Py_CLEAR(*offsets);
        Py_CLEAR(*data);
        return -1;
    }
    return 0;
}

/* ---- the builder ---- */

typedef struct {
    PyObject_HEAD
    int include_headers;
    int busy;     /* a call is running (a callback may have let another thread in) */
    const char *unusable; /* why no call may run any more (finish() was called, ...) */
    Py_ssize_t count;
    Buf offsets;    /* int64 LE x count */
    Buf timestamps; /* int64 LE x count */
    Buf types;      /* int32 LE x count */
    Binary keys;
    Binary values;
    Buf header_offsets; /* int32 LE x (count + 1) */
    Binary header_keys; /* never null */
    Binary header_values;
} Builder;

/* What one batch's records need from its header. */
typedef struct {
    int64_t base_offset;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int32_t records_count;
    int log_append_time;
} BatchInfo;

static void
builder_free_buffers(Builder *self)
{
    buf_free(&self->offsets);
    buf_free(&self->timestamps);
    buf_free(&self->types);
    binary_free(&self->keys);
    binary_free(&self->values);
    buf_free(&self->header_offsets);
    binary_free(&self->header_keys);
    binary_free(&self->header_values);
}

static int
Builder_init(Builder *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"include_headers", NULL};
    int include_headers;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "p:ColumnBuilder", kwlist, &include_headers)) {
        return -1;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "ColumnBuilder is in use by another call");
        return -1;
    }
    builder_free_buffers(self);
    self->include_headers = include_headers;
    self->unusable = NULL;
    self->count = 0;
    if (binary_init(&self->keys) < 0 || binary_init(&self->values) < 0 ||
        binary_init(&self->header_keys) < 0 || binary_init(&self->header_values) < 0 ||
        buf_reserve(&self->header_offsets, 4) < 0) {
        return -1;
    }
    put_le32(&self->header_offsets, 0);
    return 0;
}

static PyObject *
Builder_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)args;
    (void)kwds;
    Builder *self = (Builder *)type->tp_alloc(type, 0); /* zeroed */
    if (self != NULL) {
        self->unusable = "ColumnBuilder.__init__() was not called";
    }
    return (PyObject *)self;
}

static void
Builder_dealloc(Builder *self)
{
    builder_free_buffers(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
corrupt(const char *message, int64_t base_offset)
{
    PyErr_Format(CorruptRecordError, "%s (batch at base offset %lld)", message,
                 (long long)base_offset);
    return -1;
}

/* add_batch's outcome besides 0 (done) and -1 (an exception): a record the reference rejects,
 * or an unknown codec (the caller asks the reference for the error). */
#define MALFORMED 1
#define MAX_CODEC 4 /* ZSTD */

/* Whether the ``len`` bytes at ``s`` are UTF-8 (strict, as ``bytes.decode()``): 1 yes, 0 no,
 * -1 exception. */
static int
is_utf8(const uint8_t *s, Py_ssize_t len)
{
    for (Py_ssize_t i = 0; i < len; i++) {
        if (s[i] & 0x80) {
            PyObject *text = PyUnicode_DecodeUTF8((const char *)s, len, NULL);
            if (text != NULL) {
                Py_DECREF(text);
                return 1;
            }
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                return -1;
            }
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

/* Decodes the ``records_count`` records of one batch from p[0 .. limit) and appends those
 * with offsets in [min_offset, end_offset). The checks and their order are the reference's:
 * a record is decoded whole and checked (MALFORMED at the first check that fails) before its
 * offset is looked at. Returns 0, MALFORMED or -1 (an exception). */
static int
decode_records(Builder *self, const uint8_t *p, Py_ssize_t limit, const BatchInfo *batch,
               wide min_offset, wide end_offset)
{
    const int64_t base_offset = batch->base_offset;
    Py_ssize_t pos = 0;
    for (int32_t r = 0; r < batch->records_count; r++) {
        int32_t length;
        if (read_varint(p, &pos, limit, &length) < 0 || length <= 0 || length > limit - pos) {
            return MALFORMED;
        }
        const Py_ssize_t record_end = pos + length;
        int64_t ts_delta;
        int32_t offset_delta, key_len, value_len, header_count;
        Py_ssize_t key_pos, value_pos, headers_pos;
        Py_ssize_t header_key_bytes = 0, header_value_bytes = 0;
        pos += 1; /* the attributes byte (length > 0: it is there) */
        if (read_varlong(p, &pos, record_end, &ts_delta) < 0 ||
            read_varint(p, &pos, record_end, &offset_delta) < 0 ||
            read_varint(p, &pos, record_end, &key_len) < 0 || key_len < -1) {
            return MALFORMED;
        }
        key_pos = pos;
        if (key_len > 0) {
            if (key_len > record_end - pos) {
                return MALFORMED;
            }
            pos += key_len;
        }
        if (read_varint(p, &pos, record_end, &value_len) < 0 || value_len < -1) {
            return MALFORMED;
        }
        value_pos = pos;
        if (value_len > 0) {
            if (value_len > record_end - pos) {
                return MALFORMED;
            }
            pos += value_len;
        }
        if (read_varint(p, &pos, record_end, &header_count) < 0 || header_count < 0) {
            return MALFORMED;
        }
        headers_pos = pos;
        for (int32_t h = 0; h < header_count; h++) {
            int32_t hk_len, hv_len;
            if (read_varint(p, &pos, record_end, &hk_len) < 0 || hk_len < 0 ||
                hk_len > record_end - pos) {
                return MALFORMED;
            }
            int utf8 = is_utf8(p + pos, hk_len);
            if (utf8 <= 0) {
                return utf8 < 0 ? -1 : MALFORMED;
            }
            pos += hk_len;
            header_key_bytes += hk_len;
            if (read_varint(p, &pos, record_end, &hv_len) < 0 || hv_len < -1) {
                return MALFORMED;
            }
            if (hv_len > 0) {
                if (hv_len > record_end - pos) {
                    return MALFORMED;
                }
                pos += hv_len;
                header_value_bytes += hv_len;
            }
        }
        if (pos != record_end) {
            return MALFORMED;
        }

        const wide offset = (wide)base_offset + offset_delta;
        if (offset < min_offset || offset >= end_offset) {
            continue;
        }
        const wide timestamp =
            batch->log_append_time ? (wide)batch->max_timestamp
                                   : (wide)batch->base_timestamp + ts_delta;
        if (offset > INT64_MAX || offset < INT64_MIN || timestamp > INT64_MAX ||
            timestamp < INT64_MIN) {
            PyErr_SetString(PyExc_OverflowError,
                            "a record's offset or timestamp is outside the int64 range");
            return -1;
        }
        const int32_t kept_headers = self->include_headers && header_count > 0 ? header_count : 0;
        if (binary_check_room(&self->keys, key_len, "key") < 0 ||
            binary_check_room(&self->values, value_len, "value") < 0) {
            return -1;
        }
        if (kept_headers) {
            if (binary_check_room(&self->header_keys, header_key_bytes, "header key") < 0 ||
                binary_check_room(&self->header_values, header_value_bytes, "header value") <
                    0) {
                return -1;
            }
            if (kept_headers > INT32_MAX - self->header_keys.n) {
                PyErr_SetString(PyExc_OverflowError, "more than 2**31-1 headers");
                return -1;
            }
        }
        if (buf_reserve(&self->offsets, 8) < 0 || buf_reserve(&self->timestamps, 8) < 0 ||
            buf_reserve(&self->types, 4) < 0 || buf_reserve(&self->header_offsets, 4) < 0) {
            return -1;
        }
        /* Room was checked: only memory can fail from here, and leaves a half-added record. */
        if (binary_append(&self->keys, p + key_pos, key_len) < 0 ||
            binary_append(&self->values, p + value_pos, value_len) < 0) {
            goto half_added;
        }
        put_le64(&self->offsets, (uint64_t)(int64_t)offset);
        put_le64(&self->timestamps, (uint64_t)(int64_t)timestamp);
        put_le32(&self->types, batch->log_append_time ? 1u : 0u);
        if (self->include_headers) {
            /* Checked above, and read again as carefully: an mmap'ed buffer can change
             * under us (another process writing the file). */
            Py_ssize_t hpos = headers_pos;
            for (int32_t h = 0; h < kept_headers; h++) {
                int32_t hk_len, hv_len;
                if (read_varint(p, &hpos, record_end, &hk_len) < 0 || hk_len < 0 ||
                    hk_len > record_end - hpos) {
                    goto changed;
                }
                if (binary_append(&self->header_keys, p + hpos, hk_len) < 0) {
                    goto half_added;
                }
                hpos += hk_len;
                if (read_varint(p, &hpos, record_end, &hv_len) < 0 ||
                    (hv_len > 0 && hv_len > record_end - hpos)) {
                    goto changed;
                }
                if (binary_append(&self->header_values, p + hpos, hv_len) < 0) {
                    goto half_added;
                }
                if (hv_len > 0) {
                    hpos += hv_len;
                }
            }
            put_le32(&self->header_offsets, (uint32_t)self->header_keys.n);
        }
        self->count++;
        continue;
    changed:
        corrupt("a record's headers changed while being read", base_offset);
    half_added:
        self->unusable = "ColumnBuilder failed while adding a record; start a new one";
        return -1;
    }
    return pos == limit ? 0 : MALFORMED; /* bytes after the records the batch counts */
}

/* Calls ``func(view, pos)``, which is expected to raise; returns -1 with the error set. */
static int
raise_via(PyObject *func, PyObject *view, Py_ssize_t pos, const char *fallback)
{
    PyObject *result = PyObject_CallFunction(func, "On", view, pos);
    if (result != NULL) {
        Py_DECREF(result);
        PyErr_Format(CorruptRecordError, "%s at position %zd", fallback, pos);
    }
    return -1;
}

/* The CRC32C of the batch at ``pos`` matches its stored CRC; raises (validate_batch's
 * error) when not. */
static int
check_crc(PyObject *view, const uint8_t *p, Py_ssize_t pos, Py_ssize_t size)
{
    uint32_t actual;
    if (call_crc32c(crc32c, view, pos + ATTRIBUTES_OFFSET, pos + size, &actual) < 0) {
        return -1;
    }
    if (actual == be32(p + pos + CRC_OFFSET)) {
        return 0;
    }
    return raise_via(validate_batch, view, pos, "CRC mismatch in batch");
}

/* Decodes the batch at ``pos`` (whole, not control, overlapping the wanted range): 0,
 * MALFORMED (records the reference rejects, or an unknown codec) or -1 (an exception). */
static int
add_batch(Builder *self, PyObject *view, const uint8_t *p, Py_ssize_t pos, Py_ssize_t size,
          unsigned attributes, const BatchInfo *batch, wide min_offset, wide end_offset)
{
    unsigned codec = attributes & COMPRESSION_MASK;
    if (codec == 0) {
        return decode_records(self, p + pos + HEADER_SIZE, size - HEADER_SIZE, batch,
                              min_offset, end_offset);
    }
    if (codec > MAX_CODEC) {
        return MALFORMED;
    }
    Py_buffer records;
    if (decompress_records(decompress, view, pos, size, codec, &records) < 0) {
        return -1;
    }
    int rc = decode_records(self, records.buf, records.len, batch, min_offset, end_offset);
    PyBuffer_Release(&records);
    return rc;
}

/* A Python int as a 128-bit value: exact within +-(2**64 - 1), which holds every offset a
 * batch can make (base offset int64 + delta int32); beyond, +-2**65, *overflow telling the
 * side (the order of two such bounds is then settled by the caller). */
static int
clamp_offset(PyObject *value, wide *out, int *overflow)
{
    long long v = PyLong_AsLongLongAndOverflow(value, overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (*overflow == 0) {
        *out = (wide)v;
        return 0;
    }
    PyObject *magnitude = *overflow > 0 ? Py_NewRef(value) : PyNumber_Negative(value);
    if (magnitude == NULL) {
        return -1;
    }
    unsigned long long u = PyLong_AsUnsignedLongLong(magnitude);
    Py_DECREF(magnitude);
    if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
            return -1;
        }
        PyErr_Clear();
        *out = (wide)*overflow * ((wide)1 << 65);
        return 0;
    }
    *out = (wide)*overflow * (wide)u;
    *overflow = 0; /* exact */
    return 0;
}

static PyObject *
wide_to_long(wide v)
{
    if (v >= INT64_MIN && v <= INT64_MAX) {
        return PyLong_FromLongLong((long long)v);
    }
    /* Only last_offset + 1 of a batch gets here: below 2**63 + 2**31, above zero. */
    return PyLong_FromUnsignedLongLong((unsigned long long)v);
}

static PyObject *
Builder_add_batches(Builder *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"data", "min_offset", "end_offset", "check_crcs", NULL};
    PyObject *data, *min_obj, *end_obj;
    int check_crcs;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOp:add_batches", kwlist, &data, &min_obj,
                                     &end_obj, &check_crcs)) {
        return NULL;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "ColumnBuilder is in use by another call");
        return NULL;
    }
    if (self->unusable != NULL) {
        PyErr_SetString(PyExc_RuntimeError, self->unusable);
        return NULL;
    }
    wide min_offset, end_offset;
    int min_overflow, end_overflow;
    if (clamp_offset(min_obj, &min_offset, &min_overflow) < 0 ||
        clamp_offset(end_obj, &end_offset, &end_overflow) < 0) {
        return NULL;
    }
    if (min_overflow && min_overflow == end_overflow) {
        /* Both beyond the same side: keep their order (no record lies between them). */
        int greater = PyObject_RichCompareBool(end_obj, min_obj, Py_GT);
        int less = greater < 0 ? -1 : PyObject_RichCompareBool(end_obj, min_obj, Py_LT);
        if (less < 0) {
            return NULL;
        }
        end_offset = min_offset + greater - less;
    }
    Py_buffer buffer;
    if (PyObject_GetBuffer(data, &buffer, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    self->busy = 1;
    PyObject *view = NULL; /* memoryview(data), made when Python is called back */
    PyObject *result = NULL;
    const uint8_t *p = buffer.buf;
    const Py_ssize_t end = buffer.len;
    Py_ssize_t pos = 0;
    wide next_offset = min_offset;
    int next_is_min = 1;
    while (end - pos >= LOG_OVERHEAD) {
        const int64_t size = (int64_t)as_i32(be32(p + pos + 8)) + LOG_OVERHEAD;
        if (size < HEADER_SIZE || size > end - pos) {
            break; /* cut off at the end of the fetch (or too short to be a batch) */
        }
        const uint8_t *h = p + pos;
        const int32_t last_offset_delta = as_i32(be32(h + LAST_OFFSET_DELTA_OFFSET));
        const int32_t records_count = as_i32(be32(h + RECORDS_COUNT_OFFSET));
        const unsigned attributes = be16(h + ATTRIBUTES_OFFSET);
        const int unusual = h[MAGIC_OFFSET] != 2 || last_offset_delta < 0 || records_count < 0;
        if ((unusual || check_crcs) && view == NULL) {
            view = PyMemoryView_FromObject(data);
            if (view == NULL) {
                goto done;
            }
        }
        if (unusual) {
            raise_via(parse_header, view, pos, "unusual batch header");
            goto done;
        }
        if (check_crcs && check_crc(view, p, pos, (Py_ssize_t)size) < 0) {
            goto done;
        }
        BatchInfo batch = {
            .base_offset = as_i64(be64(h)),
            .base_timestamp = as_i64(be64(h + BASE_TIMESTAMP_OFFSET)),
            .max_timestamp = as_i64(be64(h + MAX_TIMESTAMP_OFFSET)),
            .records_count = records_count,
            .log_append_time = (attributes & TIMESTAMP_TYPE_BIT) != 0,
        };
        const wide last_offset = (wide)batch.base_offset + last_offset_delta;
        if (last_offset + 1 > next_offset) {
            next_offset = last_offset + 1;
            next_is_min = 0;
        }
        if (!(attributes & CONTROL_BIT) && last_offset >= min_offset &&
            batch.base_offset < end_offset) {
            if ((attributes & COMPRESSION_MASK) && view == NULL) {
                view = PyMemoryView_FromObject(data);
                if (view == NULL) {
                    goto done;
                }
            }
            const int rc = add_batch(self, view, p, pos, (Py_ssize_t)size, attributes, &batch,
                                     min_offset, end_offset);
            if (rc < 0) {
                goto done;
            }
            if (rc == MALFORMED) {
                if (view == NULL && (view = PyMemoryView_FromObject(data)) == NULL) {
                    goto done;
                }
                raise_via(reference_error, view, pos,
                          "the compiled column builder rejected records the reference accepts");
                goto done;
            }
        }
        pos += (Py_ssize_t)size;
        if (next_offset >= end_offset) {
            break;
        }
    }
    result = next_is_min ? Py_NewRef(min_obj) : wide_to_long(next_offset);
done:
    Py_XDECREF(view);
    PyBuffer_Release(&buffer);
    self->busy = 0;
    return result;
}

static PyObject *
Builder_get_count(Builder *self, void *closure)
{
    (void)closure;
    return PyLong_FromSsize_t(self->count);
}

/* Sets key (a new reference) in the dict; returns -1 on error. */
static int
set_item(PyObject *dict, const char *key, PyObject *value)
{
    if (value == NULL) {
        return -1;
    }
    int rc = PyDict_SetItemString(dict, key, value);
    Py_DECREF(value);
    return rc;
}

static int
set_binary(PyObject *dict, const Binary *c, const char *validity_key, const char *offsets_key,
           const char *data_key)
{
    PyObject *validity, *offsets, *data;
    if (binary_objects(c, &validity, &offsets, &data) < 0) {
        return -1;
    }
    int rc = 0;
    if (validity_key != NULL) {
        rc = set_item(dict, validity_key, validity);
    } else {
        Py_DECREF(validity);
    }
    if (set_item(dict, offsets_key, offsets) < 0) {
        rc = -1;
    }
    if (set_item(dict, data_key, data) < 0) {
        rc = -1;
    }
    return rc;
}

static PyObject *
Builder_finish(Builder *self, PyObject *Py_UNUSED(ignored))
{
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "ColumnBuilder is in use by another call");
        return NULL;
    }
    if (self->unusable != NULL) {
        PyErr_SetString(PyExc_RuntimeError, self->unusable);
        return NULL;
    }
    PyObject *kwargs = PyDict_New();
    if (kwargs == NULL) {
        return NULL;
    }
    PyObject *columns = NULL;
    if (set_item(kwargs, "count", PyLong_FromSsize_t(self->count)) < 0 ||
        set_item(kwargs, "offsets", buf_bytes(&self->offsets)) < 0 ||
        set_item(kwargs, "timestamps", buf_bytes(&self->timestamps)) < 0 ||
        set_item(kwargs, "timestamp_types", buf_bytes(&self->types)) < 0 ||
        set_binary(kwargs, &self->keys, "key_validity", "key_offsets", "key_data") < 0 ||
        set_binary(kwargs, &self->values, "value_validity", "value_offsets", "value_data") < 0) {
        goto done;
    }
    if (self->include_headers) {
        if (set_item(kwargs, "header_offsets", buf_bytes(&self->header_offsets)) < 0 ||
            set_item(kwargs, "header_count", PyLong_FromSsize_t(self->header_keys.n)) < 0 ||
            set_binary(kwargs, &self->header_keys, NULL, "header_key_offsets",
                       "header_key_data") < 0 ||
            set_binary(kwargs, &self->header_values, "header_value_validity",
                       "header_value_offsets", "header_value_data") < 0) {
            goto done;
        }
    }
    PyObject *no_args = PyTuple_New(0);
    if (no_args == NULL) {
        goto done;
    }
    columns = PyObject_Call(Columns, no_args, kwargs);
    Py_DECREF(no_args);
    if (columns != NULL) {
        /* The builder must not be used afterwards: give its memory back now. */
        builder_free_buffers(self);
        self->unusable = "ColumnBuilder.finish() was called already";
    }
done:
    Py_DECREF(kwargs);
    return columns;
}

static PyMethodDef Builder_methods[] = {
    {"add_batches", (PyCFunction)(void (*)(void))Builder_add_batches,
     METH_VARARGS | METH_KEYWORDS,
     PyDoc_STR("add_batches(data, min_offset, end_offset, check_crcs) -> int\n\n"
               "Decodes the batches in data, keeping the records with offsets in\n"
               "[min_offset, end_offset); returns the offset to fetch next.")},
    {"finish", (PyCFunction)Builder_finish, METH_NOARGS,
     PyDoc_STR("finish() -> Columns\n\nThe buffers; the builder must not be used afterwards.")},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Builder_getset[] = {
    {"count", (getter)Builder_get_count, NULL, PyDoc_STR("Records accumulated so far."), NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject BuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "odradek._columns.ColumnBuilder",
    .tp_doc = PyDoc_STR("ColumnBuilder(include_headers)\n\n"
                        "The compiled ColumnBuilder (see odradek.records.columns)."),
    .tp_basicsize = sizeof(Builder),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Builder_new,
    .tp_init = (initproc)Builder_init,
    .tp_dealloc = (destructor)Builder_dealloc,
    .tp_methods = Builder_methods,
    .tp_getset = Builder_getset,
};

static PyObject *
set_max_column_bytes(PyObject *module, PyObject *arg)
{
    (void)module;
    Py_ssize_t limit = PyLong_AsSsize_t(arg);
    if (limit == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (limit < 0 || limit > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "the limit must be within 0 .. 2**31-1");
        return NULL;
    }
    Py_ssize_t previous = max_column_bytes;
    max_column_bytes = limit;
    return PyLong_FromSsize_t(previous);
}

static PyMethodDef module_methods[] = {
    {"_set_max_column_bytes", set_max_column_bytes, METH_O,
     PyDoc_STR("_set_max_column_bytes(limit) -> previous limit\n\n"
               "For tests only: lowers the int32 bound on one column's data bytes.")},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef columns_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "odradek._columns",
    .m_doc = PyDoc_STR("The compiled ColumnBuilder (see odradek.records.columns)."),
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__columns(void)
{
    if (Columns == NULL) {
        if ((Columns = import_attr("odradek.records.columns", "Columns")) == NULL ||
            (parse_header = import_attr("odradek.records.batch", "parse_header")) == NULL ||
            (validate_batch = import_attr("odradek.records.batch", "validate_batch")) == NULL ||
            (reference_error = import_attr("odradek.records.columns", "reference_error")) ==
                NULL ||
            (decompress = import_attr("odradek.records.compression", "decompress")) == NULL ||
            (crc32c = import_attr("odradek.records.crc", "crc32c")) == NULL ||
            (CorruptRecordError = import_attr("odradek.errors", "CorruptRecordError")) ==
                NULL) {
            Py_CLEAR(Columns);
            Py_CLEAR(parse_header);
            Py_CLEAR(validate_batch);
            Py_CLEAR(reference_error);
            Py_CLEAR(decompress);
            Py_CLEAR(crc32c);
            Py_CLEAR(CorruptRecordError);
            return NULL;
        }
    }
    if (PyType_Ready(&BuilderType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&columns_module);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "ColumnBuilder", (PyObject *)&BuilderType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
