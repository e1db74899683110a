/* odradek._records: the consumer's compiled record loop (see
 * odradek/client/consumer/decoder.py).
 *
 * ``decode_batches`` decodes the record batches of a partition's fetched bytes straight into
 * ``ConsumerRecord`` tuples, as ``decoder.py_decode`` (the Python reference) does, and stops at
 * the first batch it does not decode itself, returning that batch's position. The caller then
 * hands that one batch to the reference, which raises the error the reference raises (or, for
 * the rare batch that is valid but unusual, decodes it), and calls back for the rest. So errors
 * are the reference's own by construction; this loop only has to be exactly as strict as the
 * reference — it accepts a batch only when every check the reference makes passes — and to give
 * the same records for every batch it accepts.
 *
 * A batch is handed back (declined) when its header is unusual (shorter than a header, magic
 * other than 2, a negative last offset delta or record count: ``batch.parse_header`` raises),
 * its CRC32C does not match (``check_crcs``), its codec is unknown (5-7), any record is
 * malformed (a field truncated or overlong, a length below -1, fields that do not fill the
 * record, bytes left after the declared records, a header key that is not UTF-8), or a kept
 * record's offset or timestamp is outside the int64 range (the reference's Python ints go on).
 * Records of a declined batch already appended to ``out`` are removed first.
 *
 * What stays in Python (called once per batch, never per record): the CRC32C (``crc.crc32c``)
 * and decompression (``compression.decompress``, whose errors propagate as they would from the
 * reference, since it is called with the same arguments).
 *
 * Safety: the input is untrusted network bytes. Every read is bounds-checked against the end
 * of its record (or of the records section for a record's length); lengths are read into
 * locals once, so content changed by another thread during a callback cannot break a bound.
 * The GIL is held throughout except inside those callbacks.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_batch_format.h"

#define MAX_CODEC 4 /* ZSTD */
#define RECORD_FIELDS 12 /* ConsumerRecord's */

/* decode_batch_records' outcomes besides an exception (-1). */
#define DECODED 0
#define DECLINED 1

/* Python objects imported once at module init (strong references, never released: the
 * module is single-phase and lives as long as the interpreter). */
static PyObject *CreateTime;    /* odradek.records.batch.TimestampType.CREATE_TIME */
static PyObject *LogAppendTime; /* odradek.records.batch.TimestampType.LOG_APPEND_TIME */
static PyObject *decompress;    /* odradek.records.compression.decompress */
static PyObject *crc32c;        /* odradek.records.crc.crc32c */
static PyObject *no_headers;    /* () */

/* ---- one batch's records ---- */

/* What every record of one batch shares. */
typedef struct {
    PyObject *out;           /* the list records are appended to */
    PyTypeObject *type;      /* ConsumerRecord (a tuple subclass) */
    PyObject *topic;         /* as given */
    PyObject *partition;     /* as given */
    PyObject *timestamp_type; /* a TimestampType member */
    PyObject *epoch;         /* the batch's partition leader epoch */
    int64_t base_offset;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int32_t records_count;
    int log_append_time;
    int64_t fetch_offset;
} Batch;

/* A (key, value) header tuple, or NULL: an exception when *declined stays 0, else the key is
 * not UTF-8 (no exception set: the reference raises CorruptRecordError for it). */
static PyObject *
header_pair(const uint8_t *p, Py_ssize_t key_pos, int32_t key_len, Py_ssize_t value_pos,
            int32_t value_len, int *declined)
{
    PyObject *key = PyUnicode_DecodeUTF8((const char *)p + key_pos, key_len, NULL);
    if (key == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            *declined = 1;
        }
        return NULL;
    }
    PyObject *value = value_len < 0 ? Py_NewRef(Py_None)
                                    : PyBytes_FromStringAndSize((const char *)p + value_pos,
                                                                value_len);
    if (value == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject *pair = PyTuple_New(2);
    if (pair == NULL) {
        Py_DECREF(key);
        Py_DECREF(value);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 0, key);
    PyTuple_SET_ITEM(pair, 1, value);
    return pair;
}

/* Reads the headers of a record whose header count (not 0x00) is at p[*pos]: sets *headers
 * to a new tuple of (str, bytes | None) pairs and *size to their serialized bytes (keys and
 * values). Returns DECODED, DECLINED (malformed) or -1 (exception). */
static int
read_headers(const uint8_t *p, Py_ssize_t *pos, Py_ssize_t record_end, PyObject **headers,
             int64_t *size)
{
    int32_t count;
    if (read_varint(p, pos, record_end, &count) < 0 || count < 0) {
        return DECLINED;
    }
    /* Every header takes at least two bytes: a count beyond that is malformed, and the
     * tuple's size is bounded by the record's. */
    if (count > (record_end - *pos) / 2) {
        return DECLINED;
    }
    PyObject *tuple = PyTuple_New(count);
    if (tuple == NULL) {
        return -1;
    }
    int64_t total = 0;
    for (int32_t h = 0; h < count; h++) {
        int32_t key_len, value_len;
        if (read_varint(p, pos, record_end, &key_len) < 0 || key_len < 0 ||
            key_len > record_end - *pos) {
            goto declined;
        }
        const Py_ssize_t key_pos = *pos;
        *pos += key_len;
        if (read_varint(p, pos, record_end, &value_len) < 0 || value_len < -1 ||
            value_len > record_end - *pos) {
            goto declined;
        }
        const Py_ssize_t value_pos = *pos;
        if (value_len > 0) {
            *pos += value_len;
        }
        int declined = 0;
        PyObject *pair = header_pair(p, key_pos, key_len, value_pos, value_len, &declined);
        if (pair == NULL) {
            Py_DECREF(tuple);
            return declined ? DECLINED : -1;
        }
        PyTuple_SET_ITEM(tuple, h, pair);
        total += key_len + (value_len > 0 ? value_len : 0);
    }
    *headers = tuple;
    *size = total;
    return DECODED;
declined:
    Py_DECREF(tuple);
    return DECLINED;
}

/* A new record_type tuple of the RECORD_FIELDS references in ``fields``, which it steals
 * (NULLs allowed: then every reference is released and NULL returned, the exception set). */
static PyObject *
new_record(PyTypeObject *type, PyObject **fields)
{
    PyObject *record = NULL;
    int complete = 1;
    for (int i = 0; i < RECORD_FIELDS; i++) {
        complete &= fields[i] != NULL;
    }
    if (complete) {
        /* tuple.__new__(type, fields) without the intermediate tuple: what tuple's own
         * subtype constructor does (tp_alloc, then the items). */
        record = type->tp_alloc(type, RECORD_FIELDS);
    }
    if (record == NULL) {
        for (int i = 0; i < RECORD_FIELDS; i++) {
            Py_XDECREF(fields[i]);
        }
        return NULL;
    }
    for (int i = 0; i < RECORD_FIELDS; i++) {
        PyTuple_SET_ITEM(record, i, fields[i]);
    }
    /* Out of the cyclic GC's sight, as CPython untracks a tuple of untracked items: nothing
     * a record holds (str, int, bytes, None, a TimestampType member, a tuple of (str, bytes)
     * pairs) can refer back to it, so it can never be part of a cycle. Tracked, the records
     * of each fetch response would be traversed again by every older-generation collection
     * while they wait in the fetcher's buffer (the decode rate fell by half or more). */
    PyObject_GC_UnTrack(record);
    return record;
}

/* Decodes the ``records_count`` records of one batch from p[pos .. end) and appends those at
 * or after the fetch offset to batch->out. The reference's checks, in its order: a record is
 * decoded whole (anything malformed declines the batch) before its offset is looked at.
 * Returns DECODED, DECLINED or -1 (exception); either way the caller owns what was appended. */
static int
decode_batch_records(const Batch *batch, const uint8_t *p, Py_ssize_t pos, Py_ssize_t end)
{
    for (int32_t r = 0; r < batch->records_count; r++) {
        int32_t length;
        if (read_varint(p, &pos, end, &length) < 0 || length <= 0 || length > end - pos) {
            return DECLINED;
        }
        const Py_ssize_t record_end = pos + length;
        int64_t timestamp_delta;
        int32_t offset_delta, key_len, value_len;
        pos += 1; /* the attributes byte (length > 0: it is there) */
        if (read_varlong(p, &pos, record_end, &timestamp_delta) < 0 ||
            read_varint(p, &pos, record_end, &offset_delta) < 0 ||
            read_varint(p, &pos, record_end, &key_len) < 0 || key_len < -1 ||
            key_len > record_end - pos) {
            return DECLINED;
        }
        const Py_ssize_t key_pos = pos;
        if (key_len > 0) {
            pos += key_len;
        }
        if (read_varint(p, &pos, record_end, &value_len) < 0 || value_len < -1 ||
            value_len > record_end - pos) {
            return DECLINED;
        }
        const Py_ssize_t value_pos = pos;
        if (value_len > 0) {
            pos += value_len;
        }
        if (pos >= record_end) {
            return DECLINED; /* no header count */
        }
        PyObject *headers = NULL;
        int64_t header_size = -1;
        if (p[pos] == 0) {
            pos += 1; /* the common case: no headers */
        }
        else {
            int rc = read_headers(p, &pos, record_end, &headers, &header_size);
            if (rc != DECODED) {
                return rc;
            }
            if (PyTuple_GET_SIZE(headers) == 0) {
                header_size = -1; /* a zero count written long */
            }
        }
        int64_t offset;
        if (pos != record_end) {
            Py_XDECREF(headers);
            return DECLINED;
        }
        if (__builtin_add_overflow(batch->base_offset, (int64_t)offset_delta, &offset)) {
            /* Beyond int64: at or after any int64 fetch offset, so kept as a Python int. */
            Py_XDECREF(headers);
            return DECLINED;
        }
        if (offset < batch->fetch_offset) {
            Py_XDECREF(headers);
            continue;
        }
        int64_t timestamp = batch->max_timestamp;
        if (!batch->log_append_time &&
            __builtin_add_overflow(batch->base_timestamp, timestamp_delta, &timestamp)) {
            Py_XDECREF(headers);
            return DECLINED;
        }
        /* ConsumerRecord's fields, in order. */
        PyObject *fields[RECORD_FIELDS] = {
            Py_NewRef(batch->topic),
            Py_NewRef(batch->partition),
            PyLong_FromLongLong(offset),
            PyLong_FromLongLong(timestamp),
            Py_NewRef(batch->timestamp_type),
            key_len < 0 ? Py_NewRef(Py_None)
                        : PyBytes_FromStringAndSize((const char *)p + key_pos, key_len),
            value_len < 0 ? Py_NewRef(Py_None)
                          : PyBytes_FromStringAndSize((const char *)p + value_pos, value_len),
            headers == NULL ? Py_NewRef(no_headers) : headers,
            PyLong_FromLong(key_len),
            PyLong_FromLong(value_len),
            PyLong_FromLongLong(header_size),
            Py_NewRef(batch->epoch),
        };
        PyObject *record = new_record(batch->type, fields);
        if (record == NULL) {
            return -1;
        }
        int rc = PyList_Append(batch->out, record);
        Py_DECREF(record);
        if (rc < 0) {
            return -1;
        }
    }
    return pos == end ? DECODED : DECLINED;
}

/* The CRC32C of the batch at ``pos`` (over attributes .. end) matches its stored CRC:
 * 1 yes, 0 no, -1 exception. */
static int
crc_matches(PyObject *view, const uint8_t *p, Py_ssize_t pos, Py_ssize_t size)
{
    const uint32_t stored = be32(p + pos + CRC_OFFSET); /* read before the callback */
    uint32_t actual;
    if (call_crc32c(crc32c, view, pos + ATTRIBUTES_OFFSET, pos + size, &actual) < 0) {
        return -1;
    }
    return actual == stored;
}

/* Decodes the records of the whole batch at ``pos`` (not control, not before the fetch
 * offset), decompressing them first when its codec says so. */
static int
decode_batch(const Batch *batch, PyObject *view, const uint8_t *p, Py_ssize_t pos,
             Py_ssize_t size, unsigned codec)
{
    if (codec == 0) {
        return decode_batch_records(batch, p, pos + HEADER_SIZE, pos + size);
    }
    Py_buffer records;
    if (decompress_records(decompress, view, pos, size, codec, &records) < 0) {
        return -1;
    }
    int rc = decode_batch_records(batch, records.buf, 0, records.len);
    PyBuffer_Release(&records);
    return rc;
}

static PyObject *
decode_batches(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError, "decode_batches() takes 8 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *out = args[0], *data = args[1], *type = args[7];
    if (!PyList_Check(out)) {
        PyErr_SetString(PyExc_TypeError, "decode_batches(): out must be a list");
        return NULL;
    }
    if (!PyType_Check(type) || !PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "decode_batches(): record_type must subclass tuple");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[2]);
    if (pos == -1 && PyErr_Occurred()) {
        return NULL;
    }
    long long fetch_offset = PyLong_AsLongLong(args[3]);
    if (fetch_offset == -1 && PyErr_Occurred()) {
        return NULL;
    }
    int check_crcs = PyObject_IsTrue(args[4]);
    if (check_crcs < 0) {
        return NULL;
    }
    Py_buffer buffer;
    if (PyObject_GetBuffer(data, &buffer, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    PyObject *view = NULL; /* memoryview(data), made when Python is called back */
    PyObject *result = NULL;
    const uint8_t *p = buffer.buf;
    const Py_ssize_t end = buffer.len;
    if (pos < 0 || pos > end) {
        PyErr_SetString(PyExc_ValueError, "decode_batches(): pos is outside the data");
        goto done;
    }
    while (end - pos >= LOG_OVERHEAD) {
        const int64_t size = (int64_t)as_i32(be32(p + pos + 8)) + LOG_OVERHEAD;
        if (size <= LOG_OVERHEAD || size > end - pos) {
            break; /* cut off at the end of the fetch: the reference stops here too */
        }
        if (size < HEADER_SIZE) {
            break; /* declined: too short for a header */
        }
        const uint8_t *h = p + pos;
        const int32_t last_offset_delta = as_i32(be32(h + LAST_OFFSET_DELTA_OFFSET));
        const int32_t records_count = as_i32(be32(h + RECORDS_COUNT_OFFSET));
        const unsigned attributes = be16(h + ATTRIBUTES_OFFSET);
        if (h[MAGIC_OFFSET] != 2 || last_offset_delta < 0 || records_count < 0) {
            break; /* declined: parse_header raises */
        }
        if ((check_crcs || (attributes & COMPRESSION_MASK)) && view == NULL) {
            view = PyMemoryView_FromObject(data);
            if (view == NULL) {
                goto done;
            }
        }
        if (check_crcs) {
            int matches = crc_matches(view, p, pos, (Py_ssize_t)size);
            if (matches < 0) {
                goto done;
            }
            if (!matches) {
                break; /* declined: validate_batch raises */
            }
        }
        const int64_t base_offset = as_i64(be64(h));
        int64_t last_offset;
        const int after_int64 =
            __builtin_add_overflow(base_offset, (int64_t)last_offset_delta, &last_offset);
        const unsigned codec = attributes & COMPRESSION_MASK;
        if (!(attributes & CONTROL_BIT) && (after_int64 || last_offset >= fetch_offset)) {
            if (codec > MAX_CODEC) {
                break; /* declined: UnsupportedCompressionTypeError */
            }
            const int log_append_time = (attributes & TIMESTAMP_TYPE_BIT) != 0;
            PyObject *epoch =
                PyLong_FromLong(as_i32(be32(h + PARTITION_LEADER_EPOCH_OFFSET)));
            if (epoch == NULL) {
                goto done;
            }
            const Batch batch = {
                .out = out,
                .type = (PyTypeObject *)type,
                .topic = args[5],
                .partition = args[6],
                .timestamp_type = log_append_time ? LogAppendTime : CreateTime,
                .epoch = epoch,
                .base_offset = base_offset,
                .base_timestamp = as_i64(be64(h + BASE_TIMESTAMP_OFFSET)),
                .max_timestamp = as_i64(be64(h + MAX_TIMESTAMP_OFFSET)),
                .records_count = records_count,
                .log_append_time = log_append_time,
                .fetch_offset = fetch_offset,
            };
            const Py_ssize_t kept = PyList_GET_SIZE(out);
            int rc = decode_batch(&batch, view, p, pos, (Py_ssize_t)size, codec);
            Py_DECREF(epoch);
            if (rc < 0) {
                goto done;
            }
            if (rc == DECLINED) {
                if (PyList_SetSlice(out, kept, PY_SSIZE_T_MAX, NULL) < 0) {
                    goto done;
                }
                break;
            }
        }
        pos += (Py_ssize_t)size;
    }
    result = PyLong_FromSsize_t(pos);
done:
    Py_XDECREF(view);
    PyBuffer_Release(&buffer);
    return result;
}

static PyMethodDef module_methods[] = {
    {"decode_batches", (PyCFunction)(void (*)(void))decode_batches, METH_FASTCALL,
     PyDoc_STR("decode_batches(out, data, pos, fetch_offset, check_crcs, topic, partition,\n"
               "               record_type) -> int\n\n"
               "Appends the records at or after fetch_offset of the whole batches in data\n"
               "from pos on to out, as record_type(topic, partition, offset, ...); returns\n"
               "the position of the first batch not decoded (cut off, or declined: see\n"
               "odradek.client.consumer.decoder).")},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef records_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "odradek._records",
    .m_doc = PyDoc_STR("The consumer's compiled record loop (see "
                       "odradek.client.consumer.decoder)."),
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__records(void)
{
    if (no_headers == NULL) {
        PyObject *TimestampType = import_attr("odradek.records.batch", "TimestampType");
        if (TimestampType != NULL) {
            CreateTime = PyObject_GetAttrString(TimestampType, "CREATE_TIME");
            LogAppendTime = PyObject_GetAttrString(TimestampType, "LOG_APPEND_TIME");
            Py_DECREF(TimestampType);
        }
        if (CreateTime == NULL || LogAppendTime == NULL ||
            (decompress = import_attr("odradek.records.compression", "decompress")) == NULL ||
            (crc32c = import_attr("odradek.records.crc", "crc32c")) == NULL ||
            (no_headers = PyTuple_New(0)) == NULL) {
            Py_CLEAR(CreateTime);
            Py_CLEAR(LogAppendTime);
            Py_CLEAR(decompress);
            Py_CLEAR(crc32c);
            Py_CLEAR(no_headers);
            return NULL;
        }
    }
    return PyModule_Create(&records_module);
}
