/* The records of a magic-2 batch body read exactly as Kafka reads them, in C.
 *
 * A line-for-line translation of _kafka_record_reader._read, which stays the
 * specification: the same bytes are accepted, and a refused body gets the same message
 * (tests/log_broker/test_crecord_walk.py runs both over generated and corrupted
 * bodies). The Python walk costs about 0.9 us a record; this one a few nanoseconds, and
 * unlike aiokafka's decoder it reads attributes as an int8 and stops int32 varints at
 * five bytes, so it needs no screen and runs on every body.
 *
 * walk(data, count) takes any contiguous buffer and returns either an int of flags
 * (IN_ORDER, KEYLESS, ATTRIBUTES_OK below, as RecordFacts holds them) or, for a body
 * Kafka would refuse, the message as a str; raising CorruptRecordError is left to the
 * Python side, which owns that class. Nothing is allocated per record, and the GIL is
 * held throughout: a header name that is not ASCII is checked by Python's own UTF-8
 * decoder, so its verdict and message are exactly Python's.
 *
 * Every read is bounded by the end of the whole body, not of the record, as in the
 * Python walk: a field that runs into the next record is caught by the record-length
 * checks after it, with the same message in both.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define IN_ORDER 1      /* offset deltas were 0, 1, 2, ... */
#define KEYLESS 2       /* some record has a null key */
#define ATTRIBUTES_OK 4 /* no record attributes byte has its top bit set */

#define INT32_BYTES 5  /* the longest varint Kafka reads for an int32 */
#define INT64_BYTES 10 /* the longest varlong */

static const char PAST_END[] = "a record runs past the end of the batch";

/* Where a walk stands; `error` is set (a str) once it has failed. */
typedef struct {
    const unsigned char *data;
    int64_t n;
    int64_t pos;
    PyObject *error;
} Walk;

static int fail(Walk *w, const char *message) {
    if (w->error == NULL) {
        w->error = PyUnicode_FromString(message);
    }
    return -1;
}

/* A zigzag varint of at most INT32_BYTES bytes at w->pos, inside the int32 range. */
static inline int read_varint(Walk *w, int64_t *value) {
    if (w->pos < w->n && w->data[w->pos] < 0x80) { /* one byte: nearly every field */
        unsigned char byte = w->data[w->pos++];
        *value = (int64_t)(byte >> 1) ^ -(int64_t)(byte & 1);
        return 0;
    }
    uint64_t raw = 0;
    for (int i = 0; i < INT32_BYTES; i++) {
        if (w->pos >= w->n) {
            return fail(w, PAST_END);
        }
        unsigned char byte = w->data[w->pos++];
        raw |= (uint64_t)(byte & 0x7F) << (7 * i);
        if (byte < 0x80) {
            int64_t decoded = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            if (decoded < INT32_MIN || decoded > INT32_MAX) {
                w->error = PyUnicode_FromFormat(
                    "varint %lld is outside the int32 range", (long long)decoded);
                return -1;
            }
            *value = decoded;
            return 0;
        }
    }
    return fail(w, "varint longer than 5 bytes");
}

/* Step over a varlong of at most INT64_BYTES bytes: only its form is checked, as Kafka
 * keeps whatever a tenth byte holds. */
static int skip_varlong(Walk *w) {
    for (int i = 0; i < INT64_BYTES; i++) {
        if (w->pos >= w->n) {
            return fail(w, PAST_END);
        }
        if (w->data[w->pos++] < 0x80) {
            return 0;
        }
    }
    return fail(w, "varint longer than 10 bytes");
}

/* A header name must be UTF-8. ASCII is; anything else goes to Python's strict decoder,
 * whose exception text ends the message. -2 for an error that is not the body's fault
 * (out of memory), left raised. */
static int check_name(Walk *w, int64_t size) {
    const unsigned char *name = w->data + w->pos;
    int64_t i = 0;
    while (i < size && name[i] < 0x80) {
        i++;
    }
    if (i == size) {
        return 0;
    }
    PyObject *decoded = PyUnicode_DecodeUTF8((const char *)name, (Py_ssize_t)size, "strict");
    if (decoded != NULL) {
        Py_DECREF(decoded);
        return 0;
    }
    if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        return -2;
    }
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc = PyErr_GetRaisedException();
#else
    PyObject *type, *exc, *traceback;
    PyErr_Fetch(&type, &exc, &traceback);
    PyErr_NormalizeException(&type, &exc, &traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
#endif
    w->error = PyUnicode_FromFormat("record header name is not UTF-8: %S", exc);
    Py_XDECREF(exc);
    return w->error == NULL ? -2 : -1;
}

/* The headers of a record ending at `end`, w->pos at their count (not zero). */
static int read_headers(Walk *w, int64_t end) {
    int64_t count, size;
    if (read_varint(w, &count) < 0) {
        return -1;
    }
    if (count < 0) {
        w->error = PyUnicode_FromFormat("negative record header count %lld", (long long)count);
        return -1;
    }
    for (int64_t h = 0; h < count; h++) {
        if (read_varint(w, &size) < 0) {
            return -1;
        }
        if (size < 0) {
            return fail(w, "record header with a null name");
        }
        if (w->pos + size > end) {
            return fail(w, "record header name runs past the record");
        }
        int checked = check_name(w, size);
        if (checked < 0) {
            return checked;
        }
        w->pos += size;
        if (read_varint(w, &size) < 0) {
            return -1;
        }
        if (size > 0) {
            w->pos += size;
        }
        if (w->pos > end) {
            return fail(w, "record header value runs past the record");
        }
    }
    return 0;
}

/* The numbered steps are those of _kafka_record_reader's docstring. */
static int read_records(Walk *w, long long count, long *flags) {
    int in_order = 1, keyless = 0, attributes_ok = 1;
    int64_t length, delta, size;
    for (long long index = 0; index < count; index++) {
        if (read_varint(w, &length) < 0) { /* 1. length */
            return -1;
        }
        int64_t end = w->pos + length;
        if (length < 0 || end > w->n) {
            return fail(w, "record length runs past the end of the batch");
        }
        if (w->pos >= w->n) { /* 2. attributes */
            return fail(w, PAST_END);
        }
        attributes_ok = attributes_ok && w->data[w->pos] < 0x80;
        w->pos++;
        if (skip_varlong(w) < 0) { /* 3. timestampDelta */
            return -1;
        }
        if (read_varint(w, &delta) < 0) { /* 4. offsetDelta */
            return -1;
        }
        in_order = in_order && delta == index;
        for (int field = 0; field < 2; field++) { /* 5. key, value */
            if (read_varint(w, &size) < 0) {
                return -1;
            }
            if (size >= 0) {
                w->pos += size;
            } else if (field == 0) {
                keyless = 1;
            }
        }
        if (w->pos >= end) {
            return fail(w, "record fields run past the record's length");
        }
        if (w->data[w->pos] == 0) { /* 6. headers: nearly always none */
            w->pos++;
        } else {
            int read = read_headers(w, end);
            if (read < 0) {
                return read;
            }
        }
        if (w->pos != end) { /* 7. */
            return fail(w, "record length disagrees with its contents");
        }
    }
    if (w->pos != w->n) {
        w->error = PyUnicode_FromFormat(
            "%lld bytes left after the last record", (long long)(w->n - w->pos));
        return -1;
    }
    *flags = (in_order ? IN_ORDER : 0) | (keyless ? KEYLESS : 0) |
             (attributes_ok ? ATTRIBUTES_OK : 0);
    return 0;
}

static PyObject *walk(PyObject *module, PyObject *args) {
    Py_buffer view;
    long long count;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*L:walk", &view, &count)) {
        return NULL;
    }
    Walk w = {(const unsigned char *)view.buf, (int64_t)view.len, 0, NULL};
    long flags = 0;
    int read = read_records(&w, count, &flags);
    PyBuffer_Release(&view);
    if (read == 0) {
        return PyLong_FromLong(flags);
    }
    if (w.error == NULL) { /* -2: a Python error is already raised */
        return NULL;
    }
    return w.error;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS,
     "walk(data, count) -> int | str\n\n"
     "Read `count` records filling `data` exactly, as Kafka does: the flags IN_ORDER, "
     "KEYLESS, ATTRIBUTES_OK as an int, or the reason Kafka would refuse the records."},
    {NULL, NULL, 0, NULL},
};

static int exec_module(PyObject *module) {
    if (PyModule_AddIntConstant(module, "IN_ORDER", IN_ORDER) < 0 ||
        PyModule_AddIntConstant(module, "KEYLESS", KEYLESS) < 0 ||
        PyModule_AddIntConstant(module, "ATTRIBUTES_OK", ATTRIBUTES_OK) < 0) {
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

static struct PyModuleDef definition = {
    PyModuleDef_HEAD_INIT,
    "_crecord_walk",
    "Records of a magic-2 batch read exactly as Kafka reads them (see _kafka_record_reader).",
    0,
    methods,
    slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__crecord_walk(void) { return PyModuleDef_Init(&definition); }
