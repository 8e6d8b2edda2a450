/* Fsyncs of many files in one release of the GIL.
 *
 * os.fsync releases the GIL for one call and takes it back after: at 1,000 partitions
 * the broker's fsync threads spent about three times as long waiting to take the GIL
 * back as in the fsyncs themselves (BENCHMARKS.md, "the fsyncs, traced"), since a disk
 * commit ends many fsyncs at once and each thread then queues for the GIL. Here a list
 * of files is synced with the GIL released once for all of them, optionally from
 * several native threads side by side (a disk completes concurrent flushes in about the
 * time of one), so that a whole slice costs one GIL take instead of one per file.
 *
 * sync(ops, threads=1) takes a sequence of (fd, datasync) pairs, calls fdatasync(fd)
 * where datasync is true and fsync(fd) where it is false, each exactly once, and
 * returns a list of (errno, started, seconds) per pair in order: errno 0 for success,
 * started on the clock of time.monotonic. Raising OSError is left to the Python side
 * (_fsyncs.py), which builds it as os.fsync does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256

typedef struct {
    int fd;
    int datasync;
    int error;
    double started;
    double seconds;
} Op;

typedef struct {
    Op *ops;
    Py_ssize_t n;
    Py_ssize_t next; /* the next op to take; threads take them in turn */
} Batch;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *run(void *arg) {
    Batch *batch = (Batch *)arg;
    for (;;) {
        Py_ssize_t i = __atomic_fetch_add(&batch->next, 1, __ATOMIC_RELAXED);
        if (i >= batch->n) {
            return NULL;
        }
        Op *op = &batch->ops[i];
        op->started = now();
        int rc = op->datasync ? fdatasync(op->fd) : fsync(op->fd);
        op->error = rc == 0 ? 0 : errno;
        op->seconds = now() - op->started;
    }
}

/* Read ops from the Python sequence; -1 with an exception set on a bad argument. */
static int read_ops(PyObject *seq, Op *ops, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "each op must be a (fd, datasync) tuple");
            return -1;
        }
        int fd = PyObject_AsFileDescriptor(PyTuple_GET_ITEM(pair, 0));
        if (fd < 0) {
            return -1; /* the ValueError or TypeError os.fsync gives */
        }
        int datasync = PyObject_IsTrue(PyTuple_GET_ITEM(pair, 1));
        if (datasync < 0) {
            return -1;
        }
        ops[i] = (Op){fd, datasync, 0, 0.0, 0.0};
    }
    return 0;
}

static PyObject *sync_ops(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"ops", "threads", NULL};
    PyObject *given;
    int threads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|i:sync", keywords, &given, &threads)) {
        return NULL;
    }
    if (threads < 1) {
        PyErr_SetString(PyExc_ValueError, "threads must be at least 1");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(given, "ops must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Op *ops = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Op));
    if (ops == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    if (read_ops(seq, ops, n) < 0) {
        PyMem_Free(ops);
        Py_DECREF(seq);
        return NULL;
    }
    Py_DECREF(seq);

    Batch batch = {ops, n, 0};
    Py_ssize_t helpers = (threads < n ? threads : n) - 1;
    if (helpers > MAX_THREADS) {
        helpers = MAX_THREADS;
    }
    pthread_t started[MAX_THREADS];
    Py_ssize_t running = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; running < helpers; running++) {
        /* A thread that cannot be started leaves its share to the others. */
        if (pthread_create(&started[running], NULL, run, &batch) != 0) {
            break;
        }
    }
    run(&batch);
    for (Py_ssize_t i = 0; i < running; i++) {
        pthread_join(started[i], NULL);
    }
    Py_END_ALLOW_THREADS

    PyObject *result = PyList_New(n);
    for (Py_ssize_t i = 0; result != NULL && i < n; i++) {
        PyObject *item = Py_BuildValue("(idd)", ops[i].error, ops[i].started, ops[i].seconds);
        if (item == NULL) {
            Py_CLEAR(result);
        } else {
            PyList_SET_ITEM(result, i, item);
        }
    }
    PyMem_Free(ops);
    return result;
}

static PyMethodDef methods[] = {
    {"sync", (PyCFunction)(void (*)(void))sync_ops, METH_VARARGS | METH_KEYWORDS,
     "sync(ops, threads=1): fsync or fdatasync each (fd, datasync) of ops with the GIL\n"
     "released once, from up to `threads` native threads; a list of (errno, started,\n"
     "seconds) per op, errno 0 for success."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_csync", "Fsyncs of many files in one release of the GIL.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__csync(void) { return PyModule_Create(&module); }
