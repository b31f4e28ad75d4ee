/* slotlane._pages: builds a scan page's keys as Python objects in C — the one place where
 * making the objects in C pays (DESIGN.md): a page is an array record followed by one
 * bulk-string record per key (the core checks that shape), and a Python loop over 1000
 * records costs more than the SCAN itself. No pointer crosses into Python: the records and
 * the data come in as buffers (cffi's ffi.buffer over the batch's own memory). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define RECORD 24 /* sizeof(sl_reply): type u8, flags u8, reserved u16, len u32, value 8, offset u64 */

static PyObject *page_keys(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer recs, data;
    const char *enc = NULL, *errs = NULL;
    if (!PyArg_ParseTuple(args, "y*y*|zz", &recs, &data, &enc, &errs)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = recs.len / RECORD;
    if (recs.len % RECORD != 0) {
        PyErr_SetString(PyExc_ValueError, "records: not a multiple of 24 bytes");
        goto done;
    }
    out = PyList_New(n > 1 ? n - 1 : 0);
    if (!out) goto done;
    const uint8_t *r = recs.buf, *d = data.buf;
    for (Py_ssize_t i = 1; i < n; i++) {
        uint32_t len;
        uint64_t off;
        memcpy(&len, r + i * RECORD + 4, 4);
        memcpy(&off, r + i * RECORD + 16, 8);
        if (off > (uint64_t)data.len || len > (uint64_t)data.len - off) {
            PyErr_SetString(PyExc_ValueError, "a key record points past the page's data");
            Py_CLEAR(out);
            goto done;
        }
        PyObject *k = enc ? PyUnicode_Decode((const char *)d + off, len, enc, errs)
                          : PyBytes_FromStringAndSize((const char *)d + off, len);
        if (!k) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i - 1, k);
    }
done:
    PyBuffer_Release(&recs);
    PyBuffer_Release(&data);
    return out;
}

static PyMethodDef methods[] = {
    {"page_keys", page_keys, METH_VARARGS,
     "page_keys(records, data, encoding=None, errors=None) -> list: the keys of a scan page"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "slotlane._pages", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pages(void) { return PyModule_Create(&module); }
