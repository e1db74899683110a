/* odradek._record_encoder: the record codec's compiled ``encode_record`` (see
 * odradek/records/codec.py, which binds it in place of ``records.record_format.encode_record``,
 * the Python reference, when it is built).
 *
 * ``encode_record(offset_delta, timestamp_delta, key, value, headers)`` returns the bytes of one
 * v2 record, its length prefix included, exactly as the reference does. It encodes the common
 * arguments itself: int deltas within their varint ranges (int32 offset delta, int64 timestamp
 * delta), a key and a value that are each ``bytes`` or None, and headers that are a list or
 * tuple of 2-tuples (a str key, a ``bytes`` or None value) — ``Header`` pairs included. For any
 * other arguments (other buffer types, other iterables, values out of range, a header key that
 * is not UTF-8 encodable) it calls the reference with the same arguments, so such calls answer
 * and fail exactly as the reference does, by construction.
 *
 * ``encode_arrow_records(...)`` encodes a run of records (no headers) straight from the buffers
 * of Arrow binary columns — offsets, data, validity bits — and int64 timestamps, up to a batch
 * size limit: the Spark sink's fast path; odradek/spark/_arrow_encoder.py has its Python
 * reference and the argument contract. Every offset is checked against its buffer first.
 *
 * The GIL is held throughout; nothing here calls back into Python before the output is built,
 * except the reference on the declined path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_batch_format.h"

/* odradek.records.record_format.encode_record, imported once at module init (a strong reference,
 * never released: the module is single-phase and lives as long as the interpreter). */
static PyObject *reference;

/* ---- zigzag varints (the rules of odradek/records/varint.py) ---- */

static inline uint64_t
zigzag32(int32_t value)
{
    return (uint32_t)(((uint32_t)value << 1) ^ (uint32_t)(value >> 31));
}

static inline uint64_t
zigzag64(int64_t value)
{
    return ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
}

static inline Py_ssize_t
raw_size(uint64_t raw)
{
    Py_ssize_t size = 1;
    while (raw >= 0x80) {
        raw >>= 7;
        size++;
    }
    return size;
}

static inline uint8_t *
put_raw(uint8_t *out, uint64_t raw)
{
    while (raw >= 0x80) {
        *out++ = (uint8_t)((raw & 0x7F) | 0x80);
        raw >>= 7;
    }
    *out++ = (uint8_t)raw;
    return out;
}

/* A length (or -1 for None) as a zigzag varint; lengths above INT32_MAX are declined before. */
static inline uint64_t
length_raw(Py_ssize_t length)
{
    return zigzag32((int32_t)length);
}

/* ---- the arguments this encoder takes ---- */

/* One header, borrowed from the caller's sequence. */
typedef struct {
    const char *key;
    Py_ssize_t key_length;
    PyObject *value; /* bytes or Py_None */
} HeaderView;

#define MAX_INLINE_HEADERS 16

/* Reads an int argument into *out within [low, high]; returns 0, or -1 (no exception set) when
 * it is not an int or is out of range. */
static int
read_delta(PyObject *object, long long low, long long high, long long *out)
{
    if (!PyLong_CheckExact(object)) {
        return -1;
    }
    int overflow;
    long long value = PyLong_AsLongLongAndOverflow(object, &overflow);
    if (overflow || (value == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    if (value < low || value > high) {
        return -1;
    }
    *out = value;
    return 0;
}

/* Whether ``object`` is a key or value this encoder takes: bytes (at most INT32_MAX long) or
 * None. */
static inline int
takes_field(PyObject *object)
{
    return object == Py_None || (PyBytes_CheckExact(object) && PyBytes_GET_SIZE(object) <= INT32_MAX);
}

/* Size of a key or value field: its length varint plus its bytes. */
static inline Py_ssize_t
field_size(PyObject *object)
{
    if (object == Py_None) {
        return 1;
    }
    Py_ssize_t length = PyBytes_GET_SIZE(object);
    return raw_size(length_raw(length)) + length;
}

static inline uint8_t *
put_field(uint8_t *out, PyObject *object)
{
    if (object == Py_None) {
        *out++ = 1; /* zigzag(-1) */
        return out;
    }
    Py_ssize_t length = PyBytes_GET_SIZE(object);
    out = put_raw(out, length_raw(length));
    memcpy(out, PyBytes_AS_STRING(object), (size_t)length);
    return out + length;
}

/* ---- encode_record ---- */

static PyObject *
call_reference(PyObject *const *args)
{
    return PyObject_Vectorcall(reference, args, 5, NULL);
}

PyDoc_STRVAR(encode_record_doc,
             "encode_record(offset_delta, timestamp_delta, key, value, headers) -> bytes\n\n"
             "One v2 record, its length prefix included; the same bytes, answers and errors as\n"
             "odradek.records.record_format.encode_record.");

static PyObject *
encode_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "encode_record() takes 5 arguments (%zd given)", nargs);
        return NULL;
    }
    long long offset_delta, timestamp_delta;
    PyObject *key = args[2], *value = args[3], *headers = args[4];
    if (read_delta(args[0], INT32_MIN, INT32_MAX, &offset_delta) < 0 ||
        read_delta(args[1], INT64_MIN, INT64_MAX, &timestamp_delta) < 0 || !takes_field(key) ||
        !takes_field(value) || !(PyList_CheckExact(headers) || PyTuple_CheckExact(headers))) {
        return call_reference(args);
    }

    /* Headers: checked and measured first (the sequence is not changed meanwhile: nothing
     * below runs Python code). */
    Py_ssize_t count = PySequence_Fast_GET_SIZE(headers);
    if (count > INT32_MAX) {
        return call_reference(args);
    }
    HeaderView inline_views[MAX_INLINE_HEADERS];
    HeaderView *views = inline_views;
    if (count > MAX_INLINE_HEADERS) {
        views = PyMem_Malloc(sizeof(HeaderView) * (size_t)count);
        if (views == NULL) {
            return PyErr_NoMemory();
        }
    }
    PyObject *result = NULL;
    Py_ssize_t body = 1 /* attributes */ + raw_size(zigzag64((int64_t)timestamp_delta)) +
                      raw_size(zigzag32((int32_t)offset_delta)) + field_size(key) +
                      field_size(value) + raw_size(length_raw(count));
    PyObject **items = PySequence_Fast_ITEMS(headers);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *pair = items[i];
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyUnicode_CheckExact(PyTuple_GET_ITEM(pair, 0)) ||
            !takes_field(PyTuple_GET_ITEM(pair, 1))) {
            goto declined;
        }
        Py_ssize_t key_length;
        const char *header_key = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &key_length);
        if (header_key == NULL || key_length > INT32_MAX) {
            PyErr_Clear(); /* lone surrogates: the reference raises its own error */
            goto declined;
        }
        views[i].key = header_key;
        views[i].key_length = key_length;
        views[i].value = PyTuple_GET_ITEM(pair, 1);
        body += raw_size(length_raw(key_length)) + key_length + field_size(views[i].value);
        if (body > INT32_MAX) {
            goto declined; /* the record's length would not fit its varint */
        }
    }
    if (body > INT32_MAX) {
        goto declined;
    }

    result = PyBytes_FromStringAndSize(NULL, raw_size(length_raw(body)) + body);
    if (result == NULL) {
        goto done;
    }
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result);
    out = put_raw(out, length_raw(body));
    *out++ = 0; /* attributes */
    out = put_raw(out, zigzag64((int64_t)timestamp_delta));
    out = put_raw(out, zigzag32((int32_t)offset_delta));
    out = put_field(out, key);
    out = put_field(out, value);
    out = put_raw(out, length_raw(count));
    for (Py_ssize_t i = 0; i < count; i++) {
        out = put_raw(out, length_raw(views[i].key_length));
        memcpy(out, views[i].key, (size_t)views[i].key_length);
        out += views[i].key_length;
        out = put_field(out, views[i].value);
    }
    goto done;

declined:
    result = call_reference(args);
done:
    if (views != inline_views) {
        PyMem_Free(views);
    }
    return result;
}


/* ---- encode_arrow_records: a run of records straight from Arrow buffers ---- */

/* One binary column's buffers: int32 offsets, data, validity bits (NULL: all valid); ``base``
 * is the Arrow array's offset (the row i of the run is element base + i). ``present`` is 0
 * when the column is absent (every field null). */
typedef struct {
    int present;
    Py_buffer offsets, data, validity;
    int has_validity;
    Py_ssize_t base;
} BinaryColumn;

static void
release_column(BinaryColumn *column)
{
    if (column->present) {
        PyBuffer_Release(&column->offsets);
        PyBuffer_Release(&column->data);
        if (column->has_validity) {
            PyBuffer_Release(&column->validity);
        }
    }
}

/* Fills ``column`` from the Python arguments (offsets, data, validity, base); offsets None: the
 * column is absent. Checks that the rows [0, rows) have their offsets and validity bits inside
 * the buffers. Returns 0, or -1 with an exception set (buffers released). */
static int
get_column(PyObject *offsets, PyObject *data, PyObject *validity, Py_ssize_t base,
           Py_ssize_t rows, const char *name, BinaryColumn *column)
{
    memset(column, 0, sizeof(*column));
    if (offsets == Py_None) {
        return 0;
    }
    if (base < 0) {
        PyErr_Format(PyExc_ValueError, "%s: negative array offset", name);
        return -1;
    }
    if (PyObject_GetBuffer(offsets, &column->offsets, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (PyObject_GetBuffer(data, &column->data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&column->offsets);
        return -1;
    }
    if (validity != Py_None) {
        if (PyObject_GetBuffer(validity, &column->validity, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&column->offsets);
            PyBuffer_Release(&column->data);
            return -1;
        }
        column->has_validity = 1;
    }
    column->present = 1;
    column->base = base;
    if ((base + rows + 1) * 4 > column->offsets.len ||
        (column->has_validity && (base + rows + 7) / 8 > column->validity.len)) {
        release_column(column);
        PyErr_Format(PyExc_ValueError, "%s: the buffers are shorter than the rows", name);
        return -1;
    }
    return 0;
}

static inline int32_t
le32(const uint8_t *p)
{
    return as_i32((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
                  ((uint32_t)p[3] << 24));
}

static inline int64_t
le64(const uint8_t *p)
{
    uint64_t low = (uint32_t)le32(p), high = (uint32_t)le32(p + 4);
    return as_i64(low | (high << 32));
}

/* Row ``row``'s field in ``column``: *length -1 for null; 0 or -1 (ValueError) for offsets
 * that are not inside the data or go backwards. */
static inline int
column_field(const BinaryColumn *column, Py_ssize_t row, const uint8_t **bytes,
             Py_ssize_t *length)
{
    if (!column->present) {
        *length = -1;
        return 0;
    }
    Py_ssize_t at = column->base + row;
    if (column->has_validity &&
        !((((const uint8_t *)column->validity.buf)[at >> 3] >> (at & 7)) & 1)) {
        *length = -1;
        return 0;
    }
    const uint8_t *offsets = (const uint8_t *)column->offsets.buf + at * 4;
    int32_t begin = le32(offsets), end = le32(offsets + 4);
    if (begin < 0 || end < begin || end > column->data.len) {
        PyErr_SetString(PyExc_ValueError, "Arrow offsets outside the data buffer");
        return -1;
    }
    *bytes = (const uint8_t *)column->data.buf + begin;
    *length = end - begin;
    return 0;
}

static inline Py_ssize_t
sized_field(Py_ssize_t length)
{
    return length < 0 ? 1 : raw_size(length_raw(length)) + length;
}

static inline uint8_t *
put_bytes_field(uint8_t *out, const uint8_t *bytes, Py_ssize_t length)
{
    if (length < 0) {
        *out++ = 1; /* zigzag(-1) */
        return out;
    }
    out = put_raw(out, length_raw(length));
    memcpy(out, bytes, (size_t)length);
    return out + length;
}

PyDoc_STRVAR(
    encode_arrow_records_doc,
    "encode_arrow_records(rows, limit_bytes, base_timestamp, timestamps, key_offsets, key_data,\n"
    "    key_validity, key_base, value_offsets, value_data, value_validity, value_base)\n"
    "    -> (records, count, max_timestamp)\n\n"
    "The records (without headers) of the first rows of a run, as the v2 batch's records\n"
    "section; see odradek.spark._arrow_encoder.encode_arrow_records_py, the reference.");

static PyObject *
encode_arrow_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 12) {
        PyErr_Format(PyExc_TypeError, "encode_arrow_records() takes 12 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    Py_ssize_t rows = PyLong_AsSsize_t(args[0]);
    Py_ssize_t limit_bytes = PyLong_AsSsize_t(args[1]);
    long long base_timestamp = PyLong_AsLongLong(args[2]);
    Py_ssize_t key_base = PyLong_AsSsize_t(args[7]);
    Py_ssize_t value_base = PyLong_AsSsize_t(args[11]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (rows < 1 || rows > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "rows: 1 to 2**31-1 records");
        return NULL;
    }
    Py_buffer timestamps;
    int has_timestamps = args[3] != Py_None;
    if (has_timestamps) {
        if (PyObject_GetBuffer(args[3], &timestamps, PyBUF_SIMPLE) < 0) {
            return NULL;
        }
        if (timestamps.len < rows * 8) {
            PyBuffer_Release(&timestamps);
            PyErr_SetString(PyExc_ValueError, "timestamps: the buffer is shorter than the rows");
            return NULL;
        }
    }
    BinaryColumn keys, values;
    PyObject *result = NULL;
    if (get_column(args[4], args[5], args[6], key_base, rows, "key", &keys) < 0) {
        goto release_timestamps;
    }
    if (get_column(args[8], args[9], args[10], value_base, rows, "value", &values) < 0) {
        goto release_keys;
    }

    /* Pass 1: how many rows fit (the first always does), and their size. */
    Py_ssize_t total = 0, count = 0;
    int64_t max_timestamp = (int64_t)base_timestamp;
    for (; count < rows; count++) {
        const uint8_t *bytes;
        Py_ssize_t key_length, value_length;
        if (column_field(&keys, count, &bytes, &key_length) < 0 ||
            column_field(&values, count, &bytes, &value_length) < 0) {
            goto release_values;
        }
        int64_t timestamp =
            has_timestamps ? le64((const uint8_t *)timestamps.buf + count * 8) : (int64_t)base_timestamp;
        Py_ssize_t body = 1 + raw_size(zigzag64(as_i64((uint64_t)timestamp - (uint64_t)base_timestamp))) +
                          raw_size(zigzag32((int32_t)count)) + sized_field(key_length) +
                          sized_field(value_length) + 1;
        if (body > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "a record longer than 2**31-1 bytes");
            goto release_values;
        }
        Py_ssize_t size = raw_size(length_raw(body)) + body;
        if (count > 0 && HEADER_SIZE + total + size > limit_bytes) {
            break;
        }
        total += size;
        if (timestamp > max_timestamp) {
            max_timestamp = timestamp;
        }
    }

    /* Pass 2: write them. */
    PyObject *records = PyBytes_FromStringAndSize(NULL, total);
    if (records == NULL) {
        goto release_values;
    }
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(records);
    for (Py_ssize_t row = 0; row < count; row++) {
        const uint8_t *key = NULL, *value = NULL;
        Py_ssize_t key_length = -1, value_length = -1;
        (void)column_field(&keys, row, &key, &key_length); /* checked in pass 1 */
        (void)column_field(&values, row, &value, &value_length);
        int64_t timestamp =
            has_timestamps ? le64((const uint8_t *)timestamps.buf + row * 8) : (int64_t)base_timestamp;
        uint64_t delta = zigzag64(as_i64((uint64_t)timestamp - (uint64_t)base_timestamp));
        Py_ssize_t body = 1 + raw_size(delta) + raw_size(zigzag32((int32_t)row)) +
                          sized_field(key_length) + sized_field(value_length) + 1;
        out = put_raw(out, length_raw(body));
        *out++ = 0; /* attributes */
        out = put_raw(out, delta);
        out = put_raw(out, zigzag32((int32_t)row));
        out = put_bytes_field(out, key, key_length);
        out = put_bytes_field(out, value, value_length);
        *out++ = 0; /* no headers */
    }
    result = Py_BuildValue("(NnL)", records, count, (long long)max_timestamp);

release_values:
    release_column(&values);
release_keys:
    release_column(&keys);
release_timestamps:
    if (has_timestamps) {
        PyBuffer_Release(&timestamps);
    }
    return result;
}

static PyMethodDef module_methods[] = {
    {"encode_arrow_records", (PyCFunction)(void (*)(void))encode_arrow_records, METH_FASTCALL,
     encode_arrow_records_doc},
    {"encode_record", (PyCFunction)(void (*)(void))encode_record, METH_FASTCALL,
     encode_record_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef encoder_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "odradek._record_encoder",
    .m_doc = PyDoc_STR("The record codec's compiled encode_record (see odradek.records.codec) "
                       "and the Spark sink's encode_arrow_records (odradek.spark._arrow_encoder)."),
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__record_encoder(void)
{
    if (reference == NULL) {
        reference = import_attr("odradek.records.record_format", "encode_record");
        if (reference == NULL) {
            return NULL;
        }
    }
    return PyModule_Create(&encoder_module);
}
