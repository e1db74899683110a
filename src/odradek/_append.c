/* odradek._append: the leader's append fast path, compiled (see odradek/storage/file_records.py).
 *
 * ``append_batch`` checks that a buffer is exactly one whole v2 record batch within the
 * caller's limits, checks its CRC32C, writes the base offset (and partition leader epoch) into
 * it and appends it to a file descriptor, in one call. It behaves exactly like
 * ``file_records.py_append_batch``, the Python reference: the same buffers declined (None,
 * nothing written, nothing changed), the same bytes written (a bytearray is patched in place
 * and written whole; any other buffer is left untouched: up to 16 KiB it is copied, patched
 * and written whole, larger it goes out as a patched copy of its header plus the rest, with
 * writev), the same tuple returned. Writes go out in calls of at most 64 KiB, as the
 * reference's.
 *
 * What stays in Python: the CRC32C itself (``odradek.records.crc``'s, called back once
 * per batch: one CRC32C implementation in the project) and every error about the batch (a
 * declined batch takes the log's general path, which raises the precise one).
 *
 * Safety: the buffer is held (PyObject_GetBuffer) from the first read to the last write, so a
 * bytearray cannot be resized under it; header fields are read once into locals. The GIL is
 * released around each write/writev only, as os.write does; EINTR is retried after checking for
 * signals (PEP 475), a short write is finished, any other error raises OSError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "_batch_format.h"

#define MAGIC_V2 2

/* odradek.records.crc.crc32c_unwrapped (the crc32c library's function that
 * odradek.records.crc.crc32c wraps), imported once at module init (a strong reference, never
 * released: the module is single-phase and lives as long as the interpreter). */
static PyObject *crc32c;

/* ---- big-endian writes (the caller has checked the bounds) ---- */

static inline void
put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void
put_be64(uint8_t *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

/* ---- arguments ---- */

/* A limit: any Python int, clamped to the int64 range (a limit past it limits nothing, one
 * below it accepts nothing). Returns -1 with an exception set when ``obj`` is not an int. */
static int
limit_arg(PyObject *obj, const char *name, int64_t *out)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "append_batch(): %s must be an int, not %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = overflow > 0 ? INT64_MAX : overflow < 0 ? INT64_MIN : (int64_t)value;
    return 0;
}

/* An int that must fit in [low, high] (struct.error in the reference; OverflowError here: the
 * caller never passes one outside, see the .pyi). */
static int
ranged_arg(PyObject *obj, const char *name, int64_t low, int64_t high, int64_t *out)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "append_batch(): %s must be an int, not %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    long long value = PyLong_AsLongLong(obj);
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (value < low || value > high) {
        PyErr_Format(PyExc_OverflowError, "append_batch(): %s %lld is out of range", name,
                     value);
        return -1;
    }
    *out = (int64_t)value;
    return 0;
}

/* ---- writing ---- */

/* The most bytes one write call takes: file_records.WRITE_PIECE_BYTES (the page cache sizes
 * its folios by the write's length; see that module's docstring). */
#define WRITE_PIECE_BYTES (64 * 1024)
/* The largest immutable batch append_batch copies whole to write it in one piece (see
 * there); within WRITE_PIECE_BYTES. */
#define SMALL_COPY_BYTES (16 * 1024)
/* The most pieces of ``iov`` one call passes (append_batch writes one or two). */
#define MAX_PIECES 2

/* Writes every byte of ``iov`` (at most MAX_PIECES entries; updated in place) to ``fd``, in
 * calls of at most WRITE_PIECE_BYTES. Returns 0, or -1 with OSError (or the exception a
 * signal handler raised) set. */
static int
write_all(int fd, struct iovec *iov, int iovcnt)
{
    /* Skip empty pieces up front (a batch that is only a header has no rest). */
    while (iovcnt > 0 && iov->iov_len == 0) {
        iov++;
        iovcnt--;
    }
    while (iovcnt > 0) {
        struct iovec piece[MAX_PIECES];
        int count = 0;
        size_t budget = WRITE_PIECE_BYTES;
        while (count < iovcnt && count < MAX_PIECES && budget > 0) {
            piece[count].iov_base = iov[count].iov_base;
            piece[count].iov_len = iov[count].iov_len < budget ? iov[count].iov_len : budget;
            budget -= piece[count].iov_len;
            count++;
        }
        ssize_t written;
        int saved_errno;
        Py_BEGIN_ALLOW_THREADS
        written = count == 1 ? write(fd, piece->iov_base, piece->iov_len) : writev(fd, piece, count);
        saved_errno = errno;
        Py_END_ALLOW_THREADS
        if (written < 0) {
            if (saved_errno == EINTR) {
                if (PyErr_CheckSignals() < 0) {
                    return -1;
                }
                continue;
            }
            errno = saved_errno;
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        size_t left = (size_t)written;
        while (iovcnt > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return 0;
}

/* ---- append_batch ---- */

/* Whether ``data`` is a buffer the fast path takes: bytes, bytearray, or a memoryview of
 * single bytes laid out contiguously (as the reference's checks). */
static int
accepted_buffer(PyObject *data)
{
    if (PyBytes_Check(data) || PyByteArray_Check(data)) {
        return 1;
    }
    if (PyMemoryView_Check(data)) {
        Py_buffer *view = PyMemoryView_GET_BUFFER(data);
        return view->itemsize == 1 && PyBuffer_IsContiguous(view, 'C');
    }
    return 0;
}

/* 0: the CRC32C matches; 1: it does not; -1: the callback raised. */
static int
crc_mismatch(const uint8_t *batch, Py_ssize_t size, uint32_t stored)
{
    PyObject *covered = PyMemoryView_FromMemory((char *)batch + ATTRIBUTES_OFFSET,
                                                size - ATTRIBUTES_OFFSET, PyBUF_READ);
    if (covered == NULL) {
        return -1;
    }
    PyObject *result = PyObject_CallOneArg(crc32c, covered);
    if (Py_REFCNT(covered) > 1) {
        /* Kept by the callback: release it, for it points into a buffer released soon. */
        PyObject *released = PyObject_CallMethod(covered, "release", NULL);
        if (released == NULL) {
            Py_CLEAR(result);
        }
        Py_XDECREF(released);
    }
    Py_DECREF(covered);
    if (result == NULL) {
        return -1;
    }
    unsigned long actual = PyLong_AsUnsignedLong(result);
    Py_DECREF(result);
    if (actual == (unsigned long)-1 && PyErr_Occurred()) {
        return -1;
    }
    return actual != (unsigned long)stored;
}

PyDoc_STRVAR(append_batch_doc,
             "append_batch(fd, data, base_offset, leader_epoch, max_size, max_timestamp,\n"
             "             max_last_offset_delta) -> (last_offset_delta, max_timestamp,\n"
             "             records_count) | None\n\n"
             "The compiled odradek.storage.file_records.py_append_batch (same contract).");

/* The body of append_batch (and of AppendState.append), its arguments parsed. */
static PyObject *
append_core(int fd, PyObject *data, int64_t base_offset, int set_epoch, int64_t leader_epoch,
            int64_t max_size, int64_t max_timestamp, int64_t max_delta, Py_ssize_t *written)
{
    if (!accepted_buffer(data)) {
        Py_RETURN_NONE;
    }
    int in_place = PyByteArray_Check(data);
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, in_place ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    PyObject *answer = NULL;
    uint8_t *batch = view.buf;
    Py_ssize_t size = view.len;
    if (size < HEADER_SIZE) {
        answer = Py_NewRef(Py_None);
        goto done;
    }
    int32_t batch_length = as_i32(be32(batch + 8));
    uint8_t magic = batch[MAGIC_OFFSET];
    uint32_t stored_crc = be32(batch + CRC_OFFSET);
    int32_t last_offset_delta = as_i32(be32(batch + LAST_OFFSET_DELTA_OFFSET));
    int64_t batch_max_timestamp = as_i64(be64(batch + MAX_TIMESTAMP_OFFSET));
    int32_t records = as_i32(be32(batch + RECORDS_COUNT_OFFSET));
    if (magic != MAGIC_V2 || (int64_t)batch_length + LOG_OVERHEAD != (int64_t)size ||
        (int64_t)size > max_size || last_offset_delta < 0 || last_offset_delta > max_delta ||
        batch_max_timestamp < 0 || batch_max_timestamp > max_timestamp || records < 0) {
        answer = Py_NewRef(Py_None);
        goto done;
    }
    int mismatch = crc_mismatch(batch, size, stored_crc);
    if (mismatch < 0) {
        goto done;
    }
    if (mismatch) {
        answer = Py_NewRef(Py_None);
        goto done;
    }
    /* Build the answer before writing: once the bytes are out, nothing may fail. */
    answer = PyTuple_New(3);
    PyObject *delta_obj = PyLong_FromLong(last_offset_delta);
    PyObject *timestamp_obj = PyLong_FromLongLong(batch_max_timestamp);
    PyObject *records_obj = PyLong_FromLong(records);
    if (answer == NULL || delta_obj == NULL || timestamp_obj == NULL || records_obj == NULL) {
        Py_CLEAR(answer);
        Py_XDECREF(delta_obj);
        Py_XDECREF(timestamp_obj);
        Py_XDECREF(records_obj);
        goto done;
    }
    PyTuple_SET_ITEM(answer, 0, delta_obj);
    PyTuple_SET_ITEM(answer, 1, timestamp_obj);
    PyTuple_SET_ITEM(answer, 2, records_obj);
    struct iovec iov[2];
    int iovcnt;
    /* A small immutable batch is copied whole and patched here: one write() costs less than
     * a writev() of the patched header and the rest (~0.15 µs of the ~1.4 µs of a 270-byte
     * append, measured); a larger one goes out as header copy + rest, without a copy. */
    uint8_t small[SMALL_COPY_BYTES];
    uint8_t head[HEADER_SIZE];
    int copied = !in_place && size <= SMALL_COPY_BYTES;
    uint8_t *patched = in_place ? batch : copied ? small : head;
    if (!in_place) {
        memcpy(patched, batch, copied ? (size_t)size : HEADER_SIZE);
    }
    put_be64(patched, (uint64_t)base_offset);
    if (set_epoch) {
        put_be32(patched + PARTITION_LEADER_EPOCH_OFFSET, (uint32_t)leader_epoch);
    }
    if (in_place || copied) {
        iov[0].iov_base = patched;
        iov[0].iov_len = (size_t)size;
        iovcnt = 1;
    }
    else {
        iov[0].iov_base = head;
        iov[0].iov_len = HEADER_SIZE;
        iov[1].iov_base = batch + HEADER_SIZE;
        iov[1].iov_len = (size_t)(size - HEADER_SIZE);
        iovcnt = 2;
    }
    if (write_all(fd, iov, iovcnt) < 0) {
        Py_CLEAR(answer);
    }
    else {
        *written = size;
    }
done:
    PyBuffer_Release(&view);
    return answer;
}

static PyObject *
append_batch(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "append_batch() takes 7 positional arguments (%zd given)",
                     nargs);
        return NULL;
    }
    int64_t fd, base_offset, leader_epoch = 0, max_size, max_timestamp, max_delta;
    int set_epoch = args[3] != Py_None;
    if (ranged_arg(args[0], "fd", 0, INT_MAX, &fd) < 0 ||
        ranged_arg(args[2], "base_offset", INT64_MIN, INT64_MAX, &base_offset) < 0 ||
        (set_epoch &&
         ranged_arg(args[3], "leader_epoch", INT32_MIN, INT32_MAX, &leader_epoch) < 0) ||
        limit_arg(args[4], "max_size", &max_size) < 0 ||
        limit_arg(args[5], "max_timestamp", &max_timestamp) < 0 ||
        limit_arg(args[6], "max_last_offset_delta", &max_delta) < 0) {
        return NULL;
    }
    Py_ssize_t written;
    return append_core((int)fd, args[1], base_offset, set_epoch, leader_epoch, max_size,
                       max_timestamp, max_delta, &written);
}

/* ---- AppendState: the active segment's append state ---- */

/* The compiled odradek.storage.append_state.PyAppendState (its docstring is the contract;
 * the two behave identically). Every field is a plain C value but ``tail``; the segment reads
 * and writes them as attributes wherever it changes them outside ``append``. */
typedef struct {
    PyObject_HEAD
    long long base_offset;
    long long max_offset;
    long long index_interval_bytes;
    long long tail_max_batches;
    long long next_offset;
    long long max_timestamp_so_far;
    long long offset_of_max_timestamp;
    long long first_batch_timestamp;
    long long bytes_since_last_index_entry;
    char indexes_full;
    PyObject *tail; /* None, or the segment_tail.Tail tuple */
} AppendState;

static PyObject *append_name; /* "append", interned at module init */

#define MAX_RELATIVE_OFFSET 2147483647LL

static int
state_init(AppendState *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"base_offset", "index_interval_bytes", "tail_max_batches", NULL};
    long long base_offset, interval, tail_max;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "LLL:AppendState", names, &base_offset,
                                     &interval, &tail_max)) {
        return -1;
    }
    if (base_offset < 0 || base_offset > INT64_MAX - MAX_RELATIVE_OFFSET) {
        PyErr_Format(PyExc_ValueError, "AppendState(): base_offset %lld is out of range",
                     base_offset);
        return -1;
    }
    self->base_offset = base_offset;
    self->max_offset = base_offset + MAX_RELATIVE_OFFSET;
    self->index_interval_bytes = interval;
    self->tail_max_batches = tail_max;
    self->next_offset = base_offset;
    self->max_timestamp_so_far = -1;
    self->offset_of_max_timestamp = base_offset;
    self->first_batch_timestamp = -1;
    self->bytes_since_last_index_entry = 0;
    self->indexes_full = 0;
    Py_XSETREF(self->tail, Py_NewRef(Py_None));
    return 0;
}

static int
state_traverse(AppendState *self, visitproc visit, void *arg)
{
    Py_VISIT(self->tail);
    return 0;
}

static int
state_clear(AppendState *self)
{
    Py_CLEAR(self->tail);
    return 0;
}

static void
state_dealloc(AppendState *self)
{
    PyObject_GC_UnTrack(self);
    state_clear(self);
    PyTypeObject *type = Py_TYPE(self);
    type->tp_free((PyObject *)self);
}

/* The tail's three arrays (borrowed) when ``tail`` is a Tail with room for one more batch;
 * 0 (no exception) when the append must be Python's; -1 on error. */
static int
tail_arrays(AppendState *self, PyObject **arrays)
{
    PyObject *tail = self->tail;
    if (tail == NULL || !PyTuple_CheckExact(tail) || PyTuple_GET_SIZE(tail) != 4) {
        return 0;
    }
    for (int i = 0; i < 3; i++) {
        arrays[i] = PyTuple_GET_ITEM(tail, i + 1);
    }
    Py_ssize_t held = PyObject_Size(arrays[0]);
    if (held < 0) {
        return -1;
    }
    return held < self->tail_max_batches;
}

static inline int64_t
saturating_add(int64_t a, int64_t b)
{
    int64_t sum;
    if (__builtin_add_overflow(a, b, &sum)) {
        return b > 0 ? INT64_MAX : INT64_MIN;
    }
    return sum;
}

static inline int64_t
saturating_sub(int64_t a, int64_t b)
{
    int64_t difference;
    if (__builtin_sub_overflow(a, b, &difference)) {
        return b < 0 ? INT64_MAX : INT64_MIN;
    }
    return difference;
}

/* array.array and its ``append`` method descriptor, imported once at module init (strong
 * references, never released, as crc32c's). */
static PyObject *array_type;
static PyObject *array_append;

static int
append_to(PyObject *array, PyObject *value)
{
    PyObject *call_args[2] = {array, value};
    /* The tail's arrays are array.array: their append called through the descriptor skips
     * the method lookup by name (~130 instructions a call, callgrind); anything else is
     * looked up. */
    PyObject *result =
        Py_TYPE(array) == (PyTypeObject *)array_type
            ? PyObject_Vectorcall(array_append, call_args, 2, NULL)
            : PyObject_VectorcallMethod(append_name, call_args,
                                        2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (result == NULL) {
        return -1;
    }
    Py_DECREF(result);
    return 0;
}

PyDoc_STRVAR(state_append_doc,
             "append(fd, data, base_offset, leader_epoch, position, max_batch_bytes,\n"
             "       max_file_bytes, segment_ms) -> (last_offset_delta, max_timestamp,\n"
             "       records_count) | None\n\n"
             "The compiled PyAppendState.append (same contract).");

static PyObject *
state_append(AppendState *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError, "append() takes 8 positional arguments (%zd given)",
                     nargs);
        return NULL;
    }
    int64_t fd, base_offset, leader_epoch = 0, position, max_batch, max_file, segment_ms;
    int set_epoch = args[3] != Py_None;
    if (ranged_arg(args[0], "fd", 0, INT_MAX, &fd) < 0 ||
        ranged_arg(args[2], "base_offset", INT64_MIN, INT64_MAX, &base_offset) < 0 ||
        (set_epoch &&
         ranged_arg(args[3], "leader_epoch", INT32_MIN, INT32_MAX, &leader_epoch) < 0) ||
        ranged_arg(args[4], "position", 0, INT64_MAX, &position) < 0 ||
        limit_arg(args[5], "max_batch_bytes", &max_batch) < 0 ||
        limit_arg(args[6], "max_file_bytes", &max_file) < 0 ||
        limit_arg(args[7], "segment_ms", &segment_ms) < 0) {
        return NULL;
    }
    /* What the segment's Python path handles: an empty segment (or one whose first batch
     * has no timestamp), an offset below the base, a full index, an index entry due, no
     * tail or a full one. */
    int64_t first_timestamp = self->first_batch_timestamp;
    if (first_timestamp < 0 || base_offset < self->base_offset || self->indexes_full ||
        self->bytes_since_last_index_entry > self->index_interval_bytes) {
        Py_RETURN_NONE;
    }
    PyObject *arrays[3];
    int room_in_tail = tail_arrays(self, arrays);
    if (room_in_tail <= 0) {
        return room_in_tail < 0 ? NULL : Py_NewRef(Py_None);
    }
    int64_t room = saturating_sub(max_file, position);
    Py_ssize_t size = 0;
    PyObject *fields = append_core((int)fd, args[1], base_offset, set_epoch, leader_epoch,
                                   room < max_batch ? room : max_batch,
                                   saturating_add(first_timestamp, segment_ms),
                                   self->max_offset - base_offset, &size);
    if (fields == NULL || fields == Py_None) {
        return fields;
    }
    /* Written: from here on nothing may fail (the caller counts the bytes as appended). The
     * fields were built from C values: reading them back cannot fail. */
    int64_t last_offset = base_offset + PyLong_AsLongLong(PyTuple_GET_ITEM(fields, 0));
    int64_t max_timestamp = PyLong_AsLongLong(PyTuple_GET_ITEM(fields, 1));
    if (max_timestamp > self->max_timestamp_so_far) {
        self->max_timestamp_so_far = max_timestamp;
        self->offset_of_max_timestamp = base_offset;
    }
    self->bytes_since_last_index_entry += size;
    self->next_offset = last_offset + 1;
    /* As segment_tail's rule: positions and sizes first, last offsets last. */
    PyObject *position_obj = PyLong_FromLongLong(position);
    PyObject *size_obj = PyLong_FromSsize_t(size);
    PyObject *last_obj = PyLong_FromLongLong(last_offset);
    int failed = position_obj == NULL || size_obj == NULL || last_obj == NULL ||
                 append_to(arrays[0], position_obj) < 0 || append_to(arrays[2], size_obj) < 0 ||
                 append_to(arrays[1], last_obj) < 0;
    Py_XDECREF(position_obj);
    Py_XDECREF(size_obj);
    Py_XDECREF(last_obj);
    if (failed) {
        /* Out of memory with the batch written: the tail no longer lists every batch, so it
         * is forgotten (lookups scan instead, until the next index entry starts a new one),
         * and the append stands. */
        PyErr_Clear();
        Py_SETREF(self->tail, Py_NewRef(Py_None));
    }
    return fields;
}

static PyMethodDef state_methods[] = {
    {"append", (PyCFunction)(void (*)(void))state_append, METH_FASTCALL, state_append_doc},
    {NULL, NULL, 0, NULL},
};

#define STATE_FIELD(name, type, flags, doc)                                                   \
    {#name, type, offsetof(AppendState, name), flags, PyDoc_STR(doc)}

static PyMemberDef state_members[] = {
    STATE_FIELD(base_offset, T_LONGLONG, READONLY, "The segment's base offset."),
    STATE_FIELD(max_offset, T_LONGLONG, READONLY, "The largest offset the segment can hold."),
    STATE_FIELD(index_interval_bytes, T_LONGLONG, 0, "index.interval.bytes."),
    STATE_FIELD(tail_max_batches, T_LONGLONG, READONLY, "The most batches the tail lists."),
    STATE_FIELD(next_offset, T_LONGLONG, 0, "The offset after the last batch."),
    STATE_FIELD(max_timestamp_so_far, T_LONGLONG, 0, "The largest batch timestamp, or -1."),
    STATE_FIELD(offset_of_max_timestamp, T_LONGLONG, 0, "Where that timestamp is."),
    STATE_FIELD(first_batch_timestamp, T_LONGLONG, 0, "The first batch's timestamp, or -1."),
    STATE_FIELD(bytes_since_last_index_entry, T_LONGLONG, 0, "Bytes since the last entry."),
    STATE_FIELD(indexes_full, T_BOOL, 0, "Whether an index is full (a roll is due)."),
    STATE_FIELD(tail, T_OBJECT, 0, "The tail (segment_tail.Tail), or None."),
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject AppendStateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "odradek._append.AppendState",
    .tp_doc = PyDoc_STR("The compiled odradek.storage.append_state.PyAppendState."),
    .tp_basicsize = sizeof(AppendState),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)state_init,
    .tp_dealloc = (destructor)state_dealloc,
    .tp_traverse = (traverseproc)state_traverse,
    .tp_clear = (inquiry)state_clear,
    .tp_methods = state_methods,
    .tp_members = state_members,
};

static PyMethodDef module_methods[] = {
    {"append_batch", (PyCFunction)(void (*)(void))append_batch, METH_FASTCALL,
     append_batch_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef append_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "odradek._append",
    .m_doc = PyDoc_STR("The leader's append fast path (see odradek.storage.file_records)."),
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__append(void)
{
    if (crc32c == NULL && (crc32c = import_attr("odradek.records.crc", "crc32c_unwrapped")) == NULL) {
        return NULL;
    }
    if (append_name == NULL && (append_name = PyUnicode_InternFromString("append")) == NULL) {
        return NULL;
    }
    if (array_type == NULL && (array_type = import_attr("array", "array")) == NULL) {
        return NULL;
    }
    if (array_append == NULL &&
        (array_append = PyObject_GetAttr(array_type, append_name)) == NULL) {
        return NULL;
    }
    if (PyType_Ready(&AppendStateType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&append_module);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "AppendState", (PyObject *)&AppendStateType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
