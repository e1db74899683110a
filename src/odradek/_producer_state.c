/* odradek._producer_state: the leader's in-order shortcut of the producer state, compiled
 * (see odradek/storage/producer_state.py, whose py_next_in_order and py_record_next are the
 * Python reference: these behave identically, held equal by
 * tests/storage/test_producer_state_fast_path.py).
 *
 * ``producer_next_in_order`` reads an idempotent batch's header from its bytes and answers
 * the producer's entry when the batch is that producer's next data batch in order at its
 * epoch (None otherwise: ``ProducerState.check`` decides). ``producer_record_next`` records
 * such a batch once it was appended: a new ``BatchMetadata`` and ``ProducerEntry`` (the
 * NamedTuple types are passed in), the entry stored in the producers dict; it returns the
 * offset after the batch.
 *
 * Safety: the buffer is held only while its header is read into locals; every object read
 * from the state is type-checked before use (anything unexpected answers None, where the
 * Python path decides), and errors of the C API propagate as exceptions.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_batch_format.h"

#define MAGIC_V2 2
#define PRODUCER_ID_OFFSET 43
#define PRODUCER_EPOCH_OFFSET 51
#define BASE_SEQUENCE_OFFSET 53
#define TRANSACTIONAL_BIT 0x10
#define MAX_SEQUENCE INT32_MAX
#define MAX_CACHED_BATCHES 5

PyDoc_STRVAR(next_in_order_doc,
"producer_next_in_order(producers, data, /)\n--\n\n"
"The compiled producer_state.py_next_in_order: behaves identically.");

static PyObject *
producer_next_in_order(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "producer_next_in_order(dict, buffer, /)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    const uint8_t *p = view.buf;
    Py_ssize_t len = view.len;
    int plain = len >= HEADER_SIZE;
    int64_t producer_id = 0, epoch = 0, sequence = 0;
    if (plain) {
        int64_t length = as_i32(be32(p + 8));
        plain = p[MAGIC_OFFSET] == MAGIC_V2 && length + LOG_OVERHEAD == len &&
                !(be16(p + ATTRIBUTES_OFFSET) & (TRANSACTIONAL_BIT | CONTROL_BIT)) &&
                as_i32(be32(p + LAST_OFFSET_DELTA_OFFSET)) >= 0 &&
                as_i32(be32(p + RECORDS_COUNT_OFFSET)) >= 0;
        producer_id = as_i64(be64(p + PRODUCER_ID_OFFSET));
        epoch = (int16_t)be16(p + PRODUCER_EPOCH_OFFSET);
        sequence = as_i32(be32(p + BASE_SEQUENCE_OFFSET));
    }
    PyBuffer_Release(&view);
    if (!plain) {
        Py_RETURN_NONE;
    }
    PyObject *key = PyLong_FromLongLong(producer_id);
    if (key == NULL) {
        return NULL;
    }
    PyObject *entry = PyDict_GetItemWithError(args[0], key); /* borrowed */
    Py_DECREF(key);
    if (entry == NULL) {
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    }
    /* A ProducerEntry: (producer_id, producer_epoch, batches, last_timestamp); a batch is a
     * BatchMetadata whose second field is its last sequence. */
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 4) {
        Py_RETURN_NONE;
    }
    PyObject *batches = PyTuple_GET_ITEM(entry, 2);
    if (!PyTuple_Check(batches) || PyTuple_GET_SIZE(batches) == 0) {
        Py_RETURN_NONE;
    }
    PyObject *last_batch = PyTuple_GET_ITEM(batches, PyTuple_GET_SIZE(batches) - 1);
    PyObject *entry_epoch = PyTuple_GET_ITEM(entry, 1);
    if (!PyTuple_Check(last_batch) || PyTuple_GET_SIZE(last_batch) < 2 ||
        !PyLong_CheckExact(entry_epoch) || !PyLong_CheckExact(PyTuple_GET_ITEM(last_batch, 1))) {
        Py_RETURN_NONE;
    }
    int overflow = 0;
    long long known_epoch = PyLong_AsLongLongAndOverflow(entry_epoch, &overflow);
    if (overflow || known_epoch != epoch) {
        Py_RETURN_NONE;
    }
    long long last = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(last_batch, 1), &overflow);
    if (overflow || sequence != (last == MAX_SEQUENCE ? 0 : last + 1)) {
        Py_RETURN_NONE;
    }
    return Py_NewRef(entry);
}

/* A new instance of the tuple subclass ``type`` (a NamedTuple) holding ``items``, whose
 * references it takes (all of them, also when it fails or one of them is NULL). */
static PyObject *
new_named(PyTypeObject *type, PyObject **items, Py_ssize_t n)
{
    PyObject *made = NULL;
    int complete = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        complete = complete && items[i] != NULL;
    }
    if (complete && (made = type->tp_alloc(type, n)) != NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyTuple_SET_ITEM(made, i, items[i]);
            items[i] = NULL;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_XDECREF(items[i]);
    }
    return made;
}

static int
is_tuple_type(PyObject *type)
{
    return PyType_Check(type) && PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type);
}

PyDoc_STRVAR(record_next_doc,
"producer_record_next(producers, entry, data, base_offset, max_timestamp, now_ms,\n"
"                     batch_type, entry_type, /)\n--\n\n"
"The compiled producer_state.py_record_next: behaves identically.");

static PyObject *
producer_record_next(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8 || !PyDict_Check(args[0]) || !PyTuple_Check(args[1]) ||
        PyTuple_GET_SIZE(args[1]) != 4 || !PyTuple_Check(PyTuple_GET_ITEM(args[1], 2)) ||
        !PyLong_Check(args[3]) || !is_tuple_type(args[6]) || !is_tuple_type(args[7])) {
        PyErr_SetString(PyExc_TypeError, "producer_record_next(dict, entry, buffer, int, "
                                         "max_timestamp, now_ms, type, type, /)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[2], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (view.len < HEADER_SIZE) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "producer_record_next: not a whole batch header");
        return NULL;
    }
    int64_t delta = as_i32(be32((const uint8_t *)view.buf + LAST_OFFSET_DELTA_OFFSET));
    int64_t sequence = as_i32(be32((const uint8_t *)view.buf + BASE_SEQUENCE_OFFSET));
    PyBuffer_Release(&view);
    long long base_offset = PyLong_AsLongLong(args[3]);
    if (base_offset == -1 && PyErr_Occurred()) {
        return NULL;
    }
    long long last_offset, end_offset;
    if (__builtin_add_overflow(base_offset, delta, &last_offset) ||
        __builtin_add_overflow(last_offset, 1, &end_offset)) {
        PyErr_SetString(PyExc_OverflowError, "producer_record_next: offset out of range");
        return NULL;
    }
    PyObject *entry = args[1];
    PyObject *batches = PyTuple_GET_ITEM(entry, 2);
    PyObject *fields[5] = {
        PyLong_FromLongLong(sequence),
        PyLong_FromLongLong((sequence + delta) & MAX_SEQUENCE),
        Py_NewRef(args[3]),
        PyLong_FromLongLong(last_offset),
        Py_NewRef(args[4]),
    };
    PyObject *batch = new_named((PyTypeObject *)args[6], fields, 5);
    if (batch == NULL) {
        return NULL;
    }
    /* (*batches[1:], batch) when MAX_CACHED_BATCHES are kept, else (*batches, batch). */
    Py_ssize_t kept = PyTuple_GET_SIZE(batches);
    Py_ssize_t skip = kept >= MAX_CACHED_BATCHES ? 1 : 0;
    PyObject *appended = PyTuple_New(kept - skip + 1);
    if (appended == NULL) {
        Py_DECREF(batch);
        return NULL;
    }
    for (Py_ssize_t i = skip; i < kept; i++) {
        PyTuple_SET_ITEM(appended, i - skip, Py_NewRef(PyTuple_GET_ITEM(batches, i)));
    }
    PyTuple_SET_ITEM(appended, kept - skip, batch);
    PyObject *producer_id = PyTuple_GET_ITEM(entry, 0);
    PyObject *items[4] = {
        Py_NewRef(producer_id),
        Py_NewRef(PyTuple_GET_ITEM(entry, 1)),
        appended,
        Py_NewRef(args[5]),
    };
    PyObject *recorded = new_named((PyTypeObject *)args[7], items, 4);
    if (recorded == NULL) {
        return NULL;
    }
    int failed = PyDict_SetItem(args[0], producer_id, recorded);
    Py_DECREF(recorded);
    return failed < 0 ? NULL : PyLong_FromLongLong(end_offset);
}

static PyMethodDef module_methods[] = {
    {"producer_next_in_order", (PyCFunction)(void (*)(void))producer_next_in_order,
     METH_FASTCALL, next_in_order_doc},
    {"producer_record_next", (PyCFunction)(void (*)(void))producer_record_next, METH_FASTCALL,
     record_next_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef producer_state_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "odradek._producer_state",
    .m_doc = PyDoc_STR("The producer state's in-order shortcut (see "
                       "odradek.storage.producer_state)."),
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__producer_state(void)
{
    return PyModule_Create(&producer_state_module);
}
