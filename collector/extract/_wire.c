/* The resource -> scope -> span walk of collector/extract/otlp.py over the protobuf wire
 * format of an ExportTraceServiceRequest (the body as received, when it parsed whole, or the
 * request serialised again), producing the same SpanView objects
 * (and RejectedSpan for invalid spans) as the pure walk. Invariants kept equal to the pure
 * path: a span is validated before anything else of it is decoded (so a rejected span notes
 * nothing), a resource is decoded once, when its first span is met; text with NUL goes
 * through the Python `clean_text`, non-finite doubles through `non_finite`, and the notes
 * (duplicate key, too deep) through `note`. Bytes as received may repeat a singular field,
 * send a field with another wire type, or carry unknown fields: each is read as the protobuf
 * parser reads it (the last scalar wins, a repeated message is merged, a field of another wire
 * type is unknown, unknown fields are skipped). Malformed input raises ValueError: the caller
 * then takes the pure walk. The receivers' OTLP/JSON converters are interpreted here too
 * (`convert`, at the end). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_DEPTH 32
#define MAX_TIME_NS 0x7fffffffffffffffULL

static PyObject *SpanView, *Event, *Rejected, *clean_text, *non_finite, *note;
static PyObject *TOO_DEEP, *DUPLICATE_KEY, *empty_str;

/* SpanView and Event are slotted dataclasses whose __init__ only stores its arguments: an
 * instance is made by filling its slots (in __slots__ order, the fields' order) directly,
 * which is what calling the class does, without a Python-level call. `made` falls back to
 * the call when a class is not laid out so (`offsets` found at configure). */
#define MAX_SLOTS 24
typedef struct {
    PyObject *type;
    Py_ssize_t n, offsets[MAX_SLOTS];
    int direct;
} Maker;
static Maker span_maker, event_maker, call_maker;

static int slots_of(Maker *m, PyObject *type, Py_ssize_t n) {
    m->type = type;
    m->n = n;
    m->direct = 0;
    if (!PyType_Check(type) || n > MAX_SLOTS) return 0;
    PyObject *slots = PyObject_GetAttrString(type, "__slots__");
    if (slots == NULL) { PyErr_Clear(); return 0; }
    PyObject *names = PySequence_Tuple(slots);
    Py_DECREF(slots);
    if (names == NULL) { PyErr_Clear(); return 0; }
    int ok = PyTuple_GET_SIZE(names) == n
             && ((PyTypeObject *)type)->tp_init != NULL
             && ((PyTypeObject *)type)->tp_new == PyBaseObject_Type.tp_new
             && !PyObject_HasAttrString(type, "__post_init__");
    PyObject *dict = ((PyTypeObject *)type)->tp_dict;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        PyObject *d = PyDict_GetItemWithError(dict, PyTuple_GET_ITEM(names, i));
        if (d == NULL || Py_TYPE(d) != &PyMemberDescr_Type) { ok = 0; break; }
        PyMemberDef *def = ((PyMemberDescrObject *)d)->d_member;
        if (def->type != T_OBJECT_EX || (def->flags & READONLY)) { ok = 0; break; }
        m->offsets[i] = def->offset;
    }
    Py_DECREF(names);
    PyErr_Clear();
    m->direct = ok;
    return 0;
}

/* An instance from its n field values (references borrowed, as for a call). */
static PyObject *made(Maker *m, PyObject *const *values) {
    if (!m->direct) return PyObject_Vectorcall(m->type, values, (size_t)m->n, NULL);
    PyTypeObject *tp = (PyTypeObject *)m->type;
    PyObject *obj = tp->tp_alloc(tp, 0);
    if (obj == NULL) return NULL;
    for (Py_ssize_t i = 0; i < m->n; i++) {
        Py_INCREF(values[i]);
        *(PyObject **)((char *)obj + m->offsets[i]) = values[i];
    }
    return obj;
}

typedef struct {
    const uint8_t *p, *end;
} Cursor;

typedef struct {
    uint32_t field, wt;
    uint64_t num;             /* varint / fixed values */
    const uint8_t *data;      /* length-delimited */
    Py_ssize_t len;
} Field;

static int malformed(void) {
    PyErr_SetString(PyExc_ValueError, "malformed protobuf");
    return -1;
}

static int varint(Cursor *c, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end) return malformed();
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) { *out = v; return 0; }
    }
    return malformed();
}

static int skip_group(Cursor *c, uint32_t field, int depth);

/* 1: a field read, 0: end of message, -1: error */
static int next(Cursor *c, Field *f) {
    if (c->p >= c->end) return 0;
    uint64_t tag;
    if (varint(c, &tag) < 0) return -1;
    f->field = (uint32_t)(tag >> 3);
    f->wt = (uint32_t)(tag & 7);
    switch (f->wt) {
    case 0:
        return varint(c, &f->num) < 0 ? -1 : 1;
    case 1:
        if (c->end - c->p < 8) return malformed();
        memcpy(&f->num, c->p, 8);
        c->p += 8;
        return 1;
    case 5: {
        uint32_t v;
        if (c->end - c->p < 4) return malformed();
        memcpy(&v, c->p, 4);
        f->num = v;
        c->p += 4;
        return 1;
    }
    case 2: {
        uint64_t n;
        if (varint(c, &n) < 0) return -1;
        if (n > (uint64_t)(c->end - c->p)) return malformed();
        f->data = c->p;
        f->len = (Py_ssize_t)n;
        c->p += n;
        return 1;
    }
    case 3:
        return skip_group(c, f->field, 0) < 0 ? -1 : 1;
    default:
        return malformed();
    }
}

static int skip_group(Cursor *c, uint32_t field, int depth) {
    if (depth > 200) return malformed();  /* past the parser's own depth limit */
    Field f;
    for (;;) {
        if (c->p >= c->end) return malformed();
        uint64_t tag;
        const uint8_t *save = c->p;
        if (varint(c, &tag) < 0) return -1;
        if ((tag & 7) == 4) return (uint32_t)(tag >> 3) == field ? 0 : malformed();
        c->p = save;
        if ((tag & 7) == 3) {
            if (varint(c, &tag) < 0) return -1;
            if (skip_group(c, (uint32_t)(tag >> 3), depth + 1) < 0) return -1;
            continue;
        }
        int r = next(c, &f);
        if (r <= 0) return r < 0 ? -1 : malformed();
    }
}

/* Text as the pure path stores it: `clean_text` when it holds a NUL (valid UTF-8 from the
 * protobuf parser holds no lone surrogate, the other thing clean_text replaces). */
static PyObject *text(const uint8_t *data, Py_ssize_t len, int clean) {
    if (len == 0) { Py_INCREF(empty_str); return empty_str; }
    PyObject *s = PyUnicode_DecodeUTF8((const char *)data, len, "strict");
    if (s == NULL || !clean || memchr(data, 0, (size_t)len) == NULL) return s;
    PyObject *out = PyObject_CallOneArg(clean_text, s);
    Py_DECREF(s);
    return out;
}

/* Attribute keys and JSON object keys recur in every span of every request: short ASCII ones
 * (no NUL, so nothing to clean or note) are made once and shared, which spares decoding,
 * allocating and hashing them again. A str is immutable, so sharing it is invisible but for
 * its identity; a slot keeps the last key hashed to it. 1: `*out` is the key (or NULL with an
 * exception set), 0: not a key the cache holds. */
#define KEY_SLOTS 1024
#define KEY_MAX 64
static PyObject *key_cache[KEY_SLOTS];

static int cached_key(const uint8_t *data, Py_ssize_t len, PyObject **out) {
    if (len == 0 || len > KEY_MAX) return 0;
    uint32_t h = 2166136261u;  /* FNV-1a */
    for (Py_ssize_t i = 0; i < len; i++) {
        uint8_t b = data[i];
        if (b == 0 || b >= 0x80) return 0;
        h = (h ^ b) * 16777619u;
    }
    PyObject **slot = &key_cache[h & (KEY_SLOTS - 1)];
    PyObject *s = *slot;
    if (s != NULL && PyUnicode_GET_LENGTH(s) == len
        && memcmp(PyUnicode_1BYTE_DATA(s), data, (size_t)len) == 0) {
        Py_INCREF(s);
        *out = s;
        return 1;
    }
    s = PyUnicode_New(len, 127);
    if (s == NULL) { *out = NULL; return 1; }
    memcpy(PyUnicode_1BYTE_DATA(s), data, (size_t)len);
    (void)PyObject_Hash(s);  /* kept with it: a str's hash cannot fail */
    Py_INCREF(s);
    Py_XSETREF(*slot, s);
    *out = s;
    return 1;
}

static PyObject *hex(const uint8_t *data, Py_ssize_t len) {
    static const char digits[] = "0123456789abcdef";
    PyObject *s = PyUnicode_New(len * 2, 127);
    if (s == NULL) return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(s);
    for (Py_ssize_t i = 0; i < len; i++) {
        out[2 * i] = (Py_UCS1)digits[data[i] >> 4];
        out[2 * i + 1] = (Py_UCS1)digits[data[i] & 15];
    }
    return s;
}

static int call_note(PyObject *kind) {
    PyObject *r = PyObject_CallOneArg(note, kind);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static PyObject *any_value(const uint8_t *data, Py_ssize_t len, int depth);
static PyObject *any_member(const Field *member, int kind, int depth);

/* One KeyValue: its key (cleaned when `clean`) and value; 0 or -1. */
/* The occurrences of length-delimited `field` in data[from:len] joined: a singular message
 * field sent more than once is, as the protobuf parser reads it, the merge of its
 * occurrences, which is the parse of their concatenation. A buffer to PyMem_Free, or NULL
 * with an exception set. */
static uint8_t *joined(const uint8_t *data, Py_ssize_t len, const uint8_t *from, uint32_t field,
                       Py_ssize_t *out_len) {
    Cursor c = {from, data + len};
    Field f;
    Py_ssize_t total = 0;
    int r;
    while ((r = next(&c, &f)) > 0)
        if (f.field == field && f.wt == 2) total += f.len;
    if (r < 0) return NULL;
    uint8_t *buf = PyMem_Malloc(total ? (size_t)total : 1);
    if (buf == NULL) { PyErr_NoMemory(); return NULL; }
    Cursor d = {from, data + len};
    Py_ssize_t at = 0;
    while (next(&d, &f) > 0)
        if (f.field == field && f.wt == 2) { memcpy(buf + at, f.data, (size_t)f.len); at += f.len; }
    *out_len = total;
    return buf;
}

static int key_value(const uint8_t *data, Py_ssize_t len, int depth, int clean,
                     PyObject **key, PyObject **value) {
    Cursor c = {data, data + len};
    Field f;
    const uint8_t *k = NULL, *v = NULL;
    Py_ssize_t klen = 0, vlen = 0;
    int r, values = 0;
    while ((r = next(&c, &f)) > 0) {
        if (f.wt != 2) continue;
        if (f.field == 1) { k = f.data; klen = f.len; }
        else if (f.field == 2) { v = f.data; vlen = f.len; values++; }
    }
    if (r < 0) return -1;
    if (!cached_key(k, klen, key)) *key = text(k, klen, clean);
    if (*key == NULL) return -1;
    if (v == NULL) { Py_INCREF(Py_None); *value = Py_None; return 0; }
    if (values == 1) *value = any_value(v, vlen, depth);
    else {  /* the value sent more than once: merged */
        Py_ssize_t n = 0;
        uint8_t *buf = joined(data, len, data, 2, &n);
        *value = buf == NULL ? NULL : any_value(buf, n, depth);
        PyMem_Free(buf);
    }
    if (*value == NULL) { Py_CLEAR(*key); return -1; }
    return 0;
}

/* An AnyValue as the parser reads it: the last member of its oneof wins, a member sent with
 * another wire type than its own is an unknown field (ignored), and a message member (array,
 * kvlist) sent again after itself is merged into it; one of another kind in between replaces
 * it. */
static PyObject *any_value(const uint8_t *data, Py_ssize_t len, int depth) {
    Cursor c = {data, data + len};
    Field f, last = {0};
    int kind = 0, r, runs = 0;
    const uint8_t *run = data, *before = c.p;  /* where the last member's run began */
    while ((r = next(&c, &f)) > 0) {
        if (f.field >= 1 && f.field <= 7) {
            int want = (f.field == 2 || f.field == 3) ? 0 : (f.field == 4 ? 1 : 2);
            if ((int)f.wt == want) {
                if ((int)f.field != kind) { runs = 0; run = before; }
                kind = (int)f.field;
                last = f;
                runs++;
            }
        }
        before = c.p;
    }
    if (r < 0) return NULL;
    if (runs > 1 && (kind == 5 || kind == 6)) {
        Py_ssize_t n = 0;
        uint8_t *buf = joined(data, len, run, (uint32_t)kind, &n);
        if (buf == NULL) return NULL;
        last.data = buf;
        last.len = n;
        PyObject *out = any_member(&last, kind, depth);
        PyMem_Free(buf);
        return out;
    }
    return any_member(&last, kind, depth);
}

static PyObject *any_member(const Field *member, int kind, int depth) {
    Field last = *member, f;
    int r;
    switch (kind) {
    case 0: Py_RETURN_NONE;
    case 1: return text(last.data, last.len, 1);
    case 2: return PyBool_FromLong(last.num != 0);
    case 3: return PyLong_FromLongLong((long long)last.num);
    case 4: {
        double d;
        memcpy(&d, &last.num, 8);
        PyObject *x = PyFloat_FromDouble(d);
        if (x == NULL || isfinite(d)) return x;
        PyObject *out = PyObject_CallOneArg(non_finite, x);
        Py_DECREF(x);
        return out;
    }
    case 7: return hex(last.data, last.len);
    default: break;
    }
    if (depth >= MAX_DEPTH) {
        if (call_note(TOO_DEEP) < 0) return NULL;
        Py_RETURN_NONE;
    }
    Cursor inner = {last.data, last.data + last.len};
    if (kind == 5) {
        PyObject *list = PyList_New(0);
        if (list == NULL) return NULL;
        while ((r = next(&inner, &f)) > 0) {
            if (f.field != 1 || f.wt != 2) continue;
            PyObject *item = any_value(f.data, f.len, depth + 1);
            if (item == NULL || PyList_Append(list, item) < 0) {
                Py_XDECREF(item); Py_DECREF(list); return NULL;
            }
            Py_DECREF(item);
        }
        if (r < 0) { Py_DECREF(list); return NULL; }
        return list;
    }
    PyObject *dict = PyDict_New();
    if (dict == NULL) return NULL;
    while ((r = next(&inner, &f)) > 0) {
        if (f.field != 1 || f.wt != 2) continue;
        PyObject *key, *value;
        if (key_value(f.data, f.len, depth + 1, 0, &key, &value) < 0) {
            Py_DECREF(dict); return NULL;
        }
        int err = PyDict_SetItem(dict, key, value);
        Py_DECREF(key); Py_DECREF(value);
        if (err < 0) { Py_DECREF(dict); return NULL; }
    }
    if (r < 0) { Py_DECREF(dict); return NULL; }
    return dict;
}

/* The KeyValue entries numbered `field` of one message added to `dict`; counts them. */
static int add_attributes(PyObject *dict, const uint8_t *data, Py_ssize_t len, uint32_t field,
                          Py_ssize_t *count) {
    Cursor c = {data, data + len};
    Field f;
    int r;
    while ((r = next(&c, &f)) > 0) {
        if (f.field != field || f.wt != 2) continue;
        PyObject *key, *value;
        if (key_value(f.data, f.len, 0, 1, &key, &value) < 0) return -1;
        int err = PyDict_SetItem(dict, key, value);
        Py_DECREF(key); Py_DECREF(value);
        if (err < 0) return -1;
        (*count)++;
    }
    return r;
}

static int noted_duplicates(PyObject *dict, Py_ssize_t count) {
    return PyDict_GET_SIZE(dict) != count ? call_note(DUPLICATE_KEY) : 0;
}

static PyObject *events(const uint8_t *data, Py_ssize_t len) {
    Cursor c = {data, data + len};
    Field f, g;
    PyObject *list = PyList_New(0);
    int r;
    if (list == NULL) return NULL;
    while ((r = next(&c, &f)) > 0) {
        if (f.field != 11 || f.wt != 2) continue;
        Cursor e = {f.data, f.data + f.len};
        uint64_t time = 0;
        const uint8_t *name = NULL;
        Py_ssize_t nlen = 0, count = 0;
        int s;
        while ((s = next(&e, &g)) > 0) {
            if (g.field == 1 && g.wt == 1) time = g.num;
            else if (g.field == 2 && g.wt == 2) { name = g.data; nlen = g.len; }
        }
        if (s < 0) goto fail;
        PyObject *args[3] = {NULL, NULL, NULL};
        args[0] = text(name, nlen, 1);
        args[1] = PyLong_FromUnsignedLongLong(time);
        args[2] = PyDict_New();
        PyObject *event = NULL;
        if (args[0] && args[1] && args[2]
            && add_attributes(args[2], f.data, f.len, 3, &count) == 0
            && noted_duplicates(args[2], count) == 0)
            event = made(&event_maker, args);
        Py_XDECREF(args[0]); Py_XDECREF(args[1]); Py_XDECREF(args[2]);
        if (event == NULL) goto fail;
        if (PyList_Append(list, event) < 0) { Py_DECREF(event); goto fail; }
        Py_DECREF(event);
    }
    if (r < 0) goto fail;
    PyObject *tuple = PyList_AsTuple(list);
    Py_DECREF(list);
    return tuple;
fail:
    Py_DECREF(list);
    return NULL;
}

static PyObject *reject(const uint8_t *tid, Py_ssize_t tlen, const uint8_t *sid, Py_ssize_t slen,
                        const uint8_t *name, Py_ssize_t nlen, PyObject *reason) {
    PyObject *args[4] = {hex(tid, tlen), hex(sid, slen), text(name, nlen, 0), reason};
    PyObject *out = NULL;
    if (args[0] && args[1] && args[2] && reason)
        out = PyObject_Vectorcall(Rejected, args, 4, NULL);
    Py_XDECREF(args[0]); Py_XDECREF(args[1]); Py_XDECREF(args[2]); Py_XDECREF(reason);
    return out;
}

static int all_zero(const uint8_t *d, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) if (d[i]) return 0;
    return 1;
}

/* (SpanView, raw name) or (None, RejectedSpan) */
static PyObject *span(const uint8_t *data, Py_ssize_t len, PyObject *resource, PyObject *scope) {
    Cursor c = {data, data + len};
    Field f, g;
    const uint8_t *tid = NULL, *sid = NULL, *pid = NULL, *name = NULL, *msg = NULL;
    Py_ssize_t tlen = 0, slen = 0, plen = 0, nlen = 0, mlen = 0;
    uint64_t start = 0, end = 0;
    int code = 0, has_events = 0, r;
    while ((r = next(&c, &f)) > 0) {
        switch (f.field) {
        case 1: if (f.wt == 2) { tid = f.data; tlen = f.len; } break;
        case 2: if (f.wt == 2) { sid = f.data; slen = f.len; } break;
        case 4: if (f.wt == 2) { pid = f.data; plen = f.len; } break;
        case 5: if (f.wt == 2) { name = f.data; nlen = f.len; } break;
        case 7: if (f.wt == 1) start = f.num; break;
        case 8: if (f.wt == 1) end = f.num; break;
        case 11: if (f.wt == 2) has_events = 1; break;
        case 15:
            if (f.wt == 2) {
                Cursor s = {f.data, f.data + f.len};
                int q;
                while ((q = next(&s, &g)) > 0) {
                    if (g.field == 2 && g.wt == 2) { msg = g.data; mlen = g.len; }
                    else if (g.field == 3 && g.wt == 0) code = (int32_t)g.num;
                }
                if (q < 0) return NULL;
            }
            break;
        default: break;
        }
    }
    if (r < 0) return NULL;
    PyObject *reason = NULL;
    if (tlen != 16)
        reason = PyUnicode_FromFormat("trace_id must be 16 bytes, got %zd", tlen);
    else if (all_zero(tid, 16))
        reason = PyUnicode_FromString("trace_id is all zeros");
    else if (slen != 8)
        reason = PyUnicode_FromFormat("span_id must be 8 bytes, got %zd", slen);
    else if (all_zero(sid, 8))
        reason = PyUnicode_FromString("span_id is all zeros");
    else if (start > MAX_TIME_NS || end > MAX_TIME_NS) {
        int first = start > MAX_TIME_NS;
        char number[32];
        snprintf(number, sizeof number, "%llu", (unsigned long long)(first ? start : end));
        reason = PyUnicode_FromFormat(
            "%s %s is out of range (at most %llu, the year 2262)",
            first ? "start_time_unix_nano" : "end_time_unix_nano", number,
            (unsigned long long)MAX_TIME_NS);
    } else if (plen && !all_zero(pid, plen) && plen != 8)
        reason = PyUnicode_FromFormat("parent_span_id must be 8 bytes, got %zd", plen);
    if (reason != NULL || PyErr_Occurred()) {
        PyObject *rejected = reject(tid, tlen, sid, slen, name, nlen, reason);
        if (rejected == NULL) return NULL;
        PyObject *pair = PyTuple_Pack(2, Py_None, rejected);
        Py_DECREF(rejected);
        return pair;
    }
    PyObject *a[12] = {NULL};
    PyObject *raw_name = NULL, *view = NULL, *pair = NULL;
    Py_ssize_t count = 0;
    a[0] = hex(tid, 16);
    a[1] = hex(sid, 8);
    if (plen && !all_zero(pid, plen)) a[2] = hex(pid, 8);
    else { Py_INCREF(Py_None); a[2] = Py_None; }
    raw_name = text(name, nlen, 0);
    if (raw_name == NULL) goto done;
    if (nlen && memchr(name, 0, (size_t)nlen)) a[3] = PyObject_CallOneArg(clean_text, raw_name);
    else { Py_INCREF(raw_name); a[3] = raw_name; }
    a[4] = PyLong_FromUnsignedLongLong(start);
    a[5] = PyLong_FromUnsignedLongLong(end > start ? end : start);
    a[6] = PyDict_New();
    if (!a[0] || !a[1] || !a[3] || !a[4] || !a[5] || !a[6]) goto done;
    if (add_attributes(a[6], data, len, 9, &count) < 0 || noted_duplicates(a[6], count) < 0)
        goto done;
    Py_INCREF(resource); a[7] = resource;
    Py_INCREF(scope); a[8] = scope;
    a[9] = PyBool_FromLong(code == 2);
    a[10] = text(msg, mlen, 1);
    if (a[10] == NULL) goto done;
    if (has_events) a[11] = events(data, len);
    else a[11] = PyTuple_New(0);
    if (a[11] == NULL) goto done;
    view = made(&span_maker, a);
    if (view != NULL) pair = PyTuple_Pack(2, view, raw_name);
done:
    for (int i = 0; i < 12; i++) Py_XDECREF(a[i]);
    Py_XDECREF(raw_name);
    Py_XDECREF(view);
    return pair;
}

static PyObject *resource_attributes(const uint8_t *data, Py_ssize_t len) {
    Cursor c = {data, data + len};
    Field f;
    Py_ssize_t count = 0;
    int r;
    PyObject *dict = PyDict_New();
    if (dict == NULL) return NULL;
    while ((r = next(&c, &f)) > 0) {
        if (f.field == 1 && f.wt == 2 && add_attributes(dict, f.data, f.len, 1, &count) < 0) {
            Py_DECREF(dict); return NULL;
        }
    }
    if (r < 0 || noted_duplicates(dict, count) < 0) { Py_DECREF(dict); return NULL; }
    return dict;
}

static PyObject *scope_name(const uint8_t *data, Py_ssize_t len) {
    Cursor c = {data, data + len};
    Field f, g;
    const uint8_t *name = NULL;
    Py_ssize_t nlen = 0;
    int r;
    while ((r = next(&c, &f)) > 0) {
        if (f.field != 1 || f.wt != 2) continue;
        Cursor s = {f.data, f.data + f.len};
        int q;
        while ((q = next(&s, &g)) > 0)
            if (g.field == 1 && g.wt == 2) { name = g.data; nlen = g.len; }
        if (q < 0) return NULL;
    }
    if (r < 0) return NULL;
    return text(name, nlen, 0);
}

static PyObject *views(PyObject *self, PyObject *arg) {
    Py_buffer buf;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = PyList_New(0);
    Cursor req = {buf.buf, (const uint8_t *)buf.buf + buf.len};
    Field rs, ss, sp;
    int r, q, s;
    if (out == NULL) goto fail;
    while ((r = next(&req, &rs)) > 0) {
        if (rs.field != 1 || rs.wt != 2) continue;
        PyObject *resource = NULL;
        Cursor rc = {rs.data, rs.data + rs.len};
        while ((q = next(&rc, &ss)) > 0) {
            if (ss.field != 2 || ss.wt != 2) continue;
            PyObject *scope = scope_name(ss.data, ss.len);
            if (scope == NULL) { Py_XDECREF(resource); goto fail; }
            Cursor sc = {ss.data, ss.data + ss.len};
            while ((s = next(&sc, &sp)) > 0) {
                if (sp.field != 2 || sp.wt != 2) continue;
                if (resource == NULL) {
                    resource = resource_attributes(rs.data, rs.len);
                    if (resource == NULL) break;
                }
                PyObject *item = span(sp.data, sp.len, resource, scope);
                if (item == NULL || PyList_Append(out, item) < 0) { Py_XDECREF(item); s = -1; break; }
                Py_DECREF(item);
            }
            Py_DECREF(scope);
            if (s < 0 || PyErr_Occurred()) { Py_XDECREF(resource); goto fail; }
        }
        Py_XDECREF(resource);
        if (q < 0) goto fail;
    }
    if (r < 0) goto fail;
    PyBuffer_Release(&buf);
    return out;
fail:
    PyBuffer_Release(&buf);
    Py_XDECREF(out);
    return NULL;
}


/* `tool_call(*fields)`: a collector.model.ToolCall from all its field values, positional, in
 * field order, made as `made` makes a SpanView (its slots filled directly; a frozen slotted
 * dataclass's __init__ only stores its arguments, one object.__setattr__ call per field). The
 * class and its field count are handed over by `configure_calls`. */
static PyObject *tool_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (call_maker.type == NULL) {
        PyErr_SetString(PyExc_TypeError, "tool_call: configure_calls was not called");
        return NULL;
    }
    if (nargs != call_maker.n) {
        PyErr_Format(PyExc_TypeError, "tool_call takes %zd positional arguments, got %zd",
                     call_maker.n, nargs);
        return NULL;
    }
    return made(&call_maker, args);
}

static PyObject *configure_calls(PyObject *self, PyObject *args) {
    PyObject *type;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "On:configure_calls", &type, &n)) return NULL;
    if (n < 1 || n > MAX_SLOTS) {
        PyErr_Format(PyExc_TypeError, "configure_calls: %zd fields (1 to %d)", n, MAX_SLOTS);
        return NULL;
    }
    Py_INCREF(type);
    Py_XSETREF(call_maker.type, type);
    slots_of(&call_maker, type, n);
    Py_RETURN_NONE;
}

/* ---- JSON text, as collector.extract.decoding's decoder reads it ----
 * `loads(text, fallback)` is `_DECODER.decode(text)` with its hooks: the grammar of Python's
 * json module (strict: no control characters in strings; NaN, Infinity and -Infinity
 * accepted; an exponent or fraction without digits is not part of the number), each
 * conversion noted with the whole text as its source, as the hooks note them: a non-finite
 * constant or a float literal past a double's range becomes its literal text (NON_FINITE), an
 * integer outside [-2**63, 2**64) its decimal text (BIG_INT), an object repeating a key keeps
 * the last value at the first key's place (DUPLICATE_KEY, noted once the object is closed).
 * Not JSON raises ValueError. Text that is not UTF-8-encodable (a lone surrogate) is
 * `fallback(text)`: the pure decoder. */
static PyObject *NON_FINITE, *BIG_INT, *JSONDecodeError, *int_low, *int_high;

typedef struct {
    const char *s, *p, *end;
    PyObject *source;
} Json;

static PyObject *json_value(Json *j);

/* json.JSONDecodeError, as the pure decoder raises (its position counts UTF-8 bytes) */
static PyObject *json_error(Json *j, const char *what) {
    PyObject *exc = PyObject_CallFunction(JSONDecodeError, "sOn", what, j->source,
                                          (Py_ssize_t)(j->p - j->s));
    if (exc != NULL) {
        PyErr_SetObject(JSONDecodeError, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

static void json_ws(Json *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int json_note(Json *j, PyObject *kind) {
    PyObject *r = PyObject_CallFunctionObjArgs(note, kind, j->source, NULL);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static int hex4(const char *p, Py_UCS4 *out) {
    Py_UCS4 v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (Py_UCS4)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (Py_UCS4)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (Py_UCS4)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

/* UTF-8 of one code point; a surrogate as the 3 bytes "surrogatepass" decodes back to it */
static int put_utf8(char *out, Py_UCS4 c) {
    if (c < 0x80) { out[0] = (char)c; return 1; }
    if (c < 0x800) { out[0] = (char)(0xc0 | (c >> 6)); out[1] = (char)(0x80 | (c & 0x3f)); return 2; }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | (c >> 12)); out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f)); return 3;
    }
    out[0] = (char)(0xf0 | (c >> 18)); out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3f)); out[3] = (char)(0x80 | (c & 0x3f)); return 4;
}

/* j->p just past the opening quote; `key`: an object's key (`cached_key`) */
static PyObject *json_string(Json *j, int key) {
    const char *start = j->p;
    int escaped = 0;
    while (j->p < j->end && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20) return json_error(j, "Invalid control character");
        if (c == '\\') {
            escaped = 1;
            j->p++;
            if (j->p >= j->end) break;
        }
        j->p++;
    }
    if (j->p >= j->end) return json_error(j, "Unterminated string");
    const char *stop = j->p++;
    PyObject *cached;
    if (!escaped && key && cached_key((const uint8_t *)start, stop - start, &cached))
        return cached;
    if (!escaped) return PyUnicode_DecodeUTF8(start, stop - start, "strict");
    /* escapes only shrink the text: the decoded bytes fit in its length */
    char *buf = PyMem_Malloc((size_t)(stop - start) + 1);
    if (buf == NULL) return PyErr_NoMemory();
    Py_ssize_t n = 0;
    for (const char *q = start; q < stop;) {
        if (*q != '\\') { buf[n++] = *q++; continue; }
        char e = q[1];
        q += 2;
        switch (e) {
        case '"': buf[n++] = '"'; break;
        case '\\': buf[n++] = '\\'; break;
        case '/': buf[n++] = '/'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            Py_UCS4 c, c2;
            if (stop - q < 4 || hex4(q, &c) < 0) {
                PyMem_Free(buf);
                j->p = q;
                return json_error(j, "Invalid \\uXXXX escape");
            }
            q += 4;
            /* a high surrogate escape followed by a low one is one character, as Python's
             * scanner joins them (it reads the second only when 6 more characters follow) */
            if (c >= 0xd800 && c <= 0xdbff && stop - q >= 6 && q[0] == '\\' && q[1] == 'u') {
                if (hex4(q + 2, &c2) < 0) {
                    PyMem_Free(buf);
                    j->p = q;
                    return json_error(j, "Invalid \\uXXXX escape");
                }
                if (c2 >= 0xdc00 && c2 <= 0xdfff) {
                    c = 0x10000 + ((c - 0xd800) << 10) + (c2 - 0xdc00);
                    q += 6;
                }
            }
            n += put_utf8(buf + n, c);
            break;
        }
        default:
            PyMem_Free(buf);
            j->p = q - 1;
            return json_error(j, "Invalid \\escape");
        }
    }
    PyObject *out = PyUnicode_DecodeUTF8(buf, n, "surrogatepass");
    PyMem_Free(buf);
    return out;
}

static PyObject *json_number(Json *j) {
    const char *start = j->p, *q = j->p;
    int is_float = 0;
    if (q < j->end && *q == '-') q++;
    if (q < j->end && *q == '0') q++;
    else if (q < j->end && *q >= '1' && *q <= '9') {
        while (q < j->end && *q >= '0' && *q <= '9') q++;
    } else return json_error(j, "Expecting value");
    if (q + 1 < j->end && *q == '.' && q[1] >= '0' && q[1] <= '9') {
        q += 2;
        while (q < j->end && *q >= '0' && *q <= '9') q++;
        is_float = 1;
    }
    if (q < j->end && (*q == 'e' || *q == 'E')) {
        const char *e = q + 1;
        if (e < j->end && (*e == '-' || *e == '+')) e++;
        if (e < j->end && *e >= '0' && *e <= '9') {
            while (e < j->end && *e >= '0' && *e <= '9') e++;
            q = e;
            is_float = 1;
        }
    }
    j->p = q;
    Py_ssize_t n = q - start;
    char small[32];
    char *lit = n < (Py_ssize_t)sizeof small ? small : PyMem_Malloc((size_t)n + 1);
    if (lit == NULL) return PyErr_NoMemory();
    memcpy(lit, start, (size_t)n);
    lit[n] = 0;
    PyObject *out = NULL;
    if (is_float) {
        double d = PyOS_string_to_double(lit, NULL, NULL);
        if (d == -1.0 && PyErr_Occurred()) goto done;
        if (isfinite(d)) out = PyFloat_FromDouble(d);
        else if (json_note(j, NON_FINITE) == 0) out = PyUnicode_FromStringAndSize(lit, n);
        goto done;
    }
    if (n <= 18) {  /* fits a long long: inside the range */
        out = PyLong_FromLongLong(strtoll(lit, NULL, 10));
        goto done;
    }
    out = PyLong_FromString(lit, NULL, 10);
    if (out == NULL) goto done;
    int low = PyObject_RichCompareBool(out, int_low, Py_GE);
    int high = low == 1 ? PyObject_RichCompareBool(out, int_high, Py_LT) : 0;
    if (low < 0 || high < 0) { Py_CLEAR(out); goto done; }
    if (!(low && high)) {
        Py_CLEAR(out);
        if (json_note(j, BIG_INT) == 0) out = PyUnicode_FromStringAndSize(lit, n);
    }
done:
    if (lit != small) PyMem_Free(lit);
    return out;
}

static int json_word(Json *j, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) >= n && memcmp(j->p, word, n) == 0) { j->p += n; return 1; }
    return 0;
}

static PyObject *json_constant(Json *j, const char *name) {
    if (json_note(j, NON_FINITE) < 0) return NULL;
    return PyUnicode_FromString(name);
}

static PyObject *json_array(Json *j) {
    PyObject *list = PyList_New(0);
    if (list == NULL) return NULL;
    json_ws(j);
    if (j->p < j->end && *j->p == ']') { j->p++; return list; }
    for (;;) {
        PyObject *item = json_value(j);
        if (item == NULL || PyList_Append(list, item) < 0) {
            Py_XDECREF(item); Py_DECREF(list); return NULL;
        }
        Py_DECREF(item);
        json_ws(j);
        if (j->p < j->end && *j->p == ']') { j->p++; return list; }
        if (j->p >= j->end || *j->p != ',') {
            Py_DECREF(list); return json_error(j, "Expecting ',' delimiter");
        }
        j->p++;
        json_ws(j);
    }
}

static PyObject *json_object(Json *j) {
    PyObject *dict = PyDict_New();
    Py_ssize_t count = 0;
    if (dict == NULL) return NULL;
    json_ws(j);
    if (j->p < j->end && *j->p == '}') { j->p++; return dict; }
    for (;;) {
        if (j->p >= j->end || *j->p != '"') {
            Py_DECREF(dict);
            return json_error(j, "Expecting property name enclosed in double quotes");
        }
        j->p++;
        PyObject *key = json_string(j, 1);
        if (key == NULL) { Py_DECREF(dict); return NULL; }
        json_ws(j);
        if (j->p >= j->end || *j->p != ':') {
            Py_DECREF(key); Py_DECREF(dict); return json_error(j, "Expecting ':' delimiter");
        }
        j->p++;
        json_ws(j);
        PyObject *value = json_value(j);
        if (value == NULL) { Py_DECREF(key); Py_DECREF(dict); return NULL; }
        int err = PyDict_SetItem(dict, key, value);
        Py_DECREF(key); Py_DECREF(value);
        if (err < 0) { Py_DECREF(dict); return NULL; }
        count++;
        json_ws(j);
        if (j->p < j->end && *j->p == '}') { j->p++; break; }
        if (j->p >= j->end || *j->p != ',') {
            Py_DECREF(dict); return json_error(j, "Expecting ',' delimiter");
        }
        j->p++;
        json_ws(j);
    }
    if (PyDict_GET_SIZE(dict) != count && json_note(j, DUPLICATE_KEY) < 0) {
        Py_DECREF(dict); return NULL;
    }
    return dict;
}

static PyObject *json_value(Json *j) {
    if (j->p >= j->end) return json_error(j, "Expecting value");
    PyObject *out;
    switch (*j->p) {
    case '"': j->p++; return json_string(j, 0);
    case '{':
    case '[':
        if (Py_EnterRecursiveCall(" while decoding a JSON document")) return NULL;
        j->p++;
        out = j->p[-1] == '{' ? json_object(j) : json_array(j);
        Py_LeaveRecursiveCall();
        return out;
    case 'n': if (json_word(j, "null")) Py_RETURN_NONE; break;
    case 't': if (json_word(j, "true")) Py_RETURN_TRUE; break;
    case 'f': if (json_word(j, "false")) Py_RETURN_FALSE; break;
    case 'N': if (json_word(j, "NaN")) return json_constant(j, "NaN"); break;
    case 'I': if (json_word(j, "Infinity")) return json_constant(j, "Infinity"); break;
    case '-':
        if (json_word(j, "-Infinity")) return json_constant(j, "-Infinity");
        return json_number(j);
    default:
        if (*j->p >= '0' && *j->p <= '9') return json_number(j);
    }
    return json_error(j, "Expecting value");
}

static PyObject *loads(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "loads(text: str, fallback)");
        return NULL;
    }
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(args[0], &n);
    if (s == NULL) {  /* a lone surrogate: not UTF-8, the pure decoder reads it */
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return NULL;
        PyErr_Clear();
        return PyObject_CallOneArg(args[1], args[0]);
    }
    Json j = {s, s, s + n, args[0]};
    json_ws(&j);
    PyObject *out = json_value(&j);
    if (out == NULL) return NULL;
    json_ws(&j);
    if (j.p != j.end) { Py_DECREF(out); return json_error(&j, "Extra data"); }
    return out;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *o[8];
    if (!PyArg_UnpackTuple(args, "configure", 8, 8, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                           &o[6], &o[7]))
        return NULL;
    PyObject **slots[8] = {&SpanView, &Event, &Rejected, &clean_text, &non_finite, &note,
                           &TOO_DEEP, &DUPLICATE_KEY};
    for (int i = 0; i < 8; i++) { Py_INCREF(o[i]); Py_XSETREF(*slots[i], o[i]); }
    slots_of(&span_maker, SpanView, 12);
    slots_of(&event_maker, Event, 3);
    Py_RETURN_NONE;
}

static PyObject *configure_json(PyObject *self, PyObject *args) {
    PyObject *o[5];
    if (!PyArg_UnpackTuple(args, "configure_json", 5, 5, &o[0], &o[1], &o[2], &o[3], &o[4]))
        return NULL;
    PyObject **slots[5] = {&NON_FINITE, &BIG_INT, &DUPLICATE_KEY, &note, &JSONDecodeError};
    for (int i = 0; i < 5; i++) { Py_INCREF(o[i]); Py_XSETREF(*slots[i], o[i]); }
    if (int_low == NULL) {
        int_low = PyLong_FromString("-9223372036854775808", NULL, 10);
        int_high = PyLong_FromString("18446744073709551616", NULL, 10);
        if (int_low == NULL || int_high == NULL) return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- OTLP/JSON: the converters of collector/receivers/otlpjson.py, interpreted here ----
 * A `_Message` (its `table`: JSON key -> (field name, converter or None, oneof or None)) and a
 * `_Repeated` (its `item`) are walked exactly as their `__call__` walks them in Python, and
 * `_Enum`, `_integer`, `_bool` and `_hex_id` (a plain hex id; any other goes to `id_bytes`)
 * read as they read; any other converter is called. Refusals raise `Defer`. */
static PyObject *MessageType, *RepeatedType, *EnumType, *Defer, *str_table, *str_item;
static PyObject *str_numbers, *str_open_enum, *integer_fn, *hex_id_fn, *bool_fn;
static long json_max_depth;

static PyObject *convert_any(PyObject *conv, PyObject *value, long depth);

static PyObject *deferred(void) {
    PyErr_SetNone(Defer);
    return NULL;
}

static PyObject *convert_message(PyObject *conv, PyObject *value, long depth) {
    if (!PyDict_CheckExact(value) || depth > json_max_depth) return deferred();
    PyObject *table = PyObject_GetAttr(conv, str_table);
    if (table == NULL) return NULL;
    if (!PyDict_CheckExact(table)) {
        Py_DECREF(table);
        PyErr_SetString(PyExc_TypeError, "_Message.table must be a dict");
        return NULL;
    }
    PyObject *out = PyDict_New(), *first = NULL, *oneofs = NULL;  /* first: borrowed */
    if (out == NULL) goto fail;
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    while (PyDict_Next(value, &pos, &key, &item)) {
        PyObject *entry = PyDict_GetItemWithError(table, key);
        if (entry == NULL) {  /* unknown: skipped, unless json_format refuses it */
            if (PyErr_Occurred()) goto fail;
            if (!PyUnicode_Check(key)) goto defer;
            if (!PyUnicode_IS_ASCII(key)
                || (PyUnicode_GET_LENGTH(key) > 0 && PyUnicode_READ_CHAR(key, 0) == '['))
                goto defer;
            continue;
        }
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3) {
            PyErr_SetString(PyExc_TypeError, "a _Message entry is (field, converter, oneof)");
            goto fail;
        }
        PyObject *field = PyTuple_GET_ITEM(entry, 0), *c = PyTuple_GET_ITEM(entry, 1);
        PyObject *oneof = PyTuple_GET_ITEM(entry, 2);
        int has = PyDict_Contains(out, field);  /* given under both names */
        if (has < 0) goto fail;
        if (has) goto defer;
        if (item == Py_None) continue;
        if (oneof != Py_None) {
            if (first == NULL) {
                first = oneof;
            } else {
                if (oneofs == NULL) {
                    oneofs = PySet_New(NULL);
                    if (oneofs == NULL || PySet_Add(oneofs, first) < 0) goto fail;
                }
                int seen = PySet_Contains(oneofs, oneof);
                if (seen < 0) goto fail;
                if (seen) goto defer;
                if (PySet_Add(oneofs, oneof) < 0) goto fail;
            }
        }
        PyObject *v;
        if (c == Py_None) {  /* a string */
            if (!PyUnicode_CheckExact(item)) goto defer;
            Py_INCREF(item);
            v = item;
        } else {
            Py_INCREF(entry);  /* kept while Python code may run */
            v = convert_any(c, item, depth + 1);
            Py_DECREF(entry);
            if (v == NULL) goto fail;
        }
        int bad = PyDict_SetItem(out, field, v);
        Py_DECREF(v);
        if (bad < 0) goto fail;
    }
    Py_DECREF(table);
    Py_XDECREF(oneofs);
    return out;
defer:
    PyErr_SetNone(Defer);
fail:
    Py_DECREF(table);
    Py_XDECREF(out);
    Py_XDECREF(oneofs);
    return NULL;
}

static PyObject *convert_repeated(PyObject *conv, PyObject *value, long depth) {
    if (!PyList_CheckExact(value)) return deferred();
    PyObject *item = PyObject_GetAttr(conv, str_item);
    if (item == NULL) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(value);
    PyObject *out = PyList_New(n);
    if (out == NULL) { Py_DECREF(item); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = i < PyList_GET_SIZE(value) ? PyList_GET_ITEM(value, i) : NULL;
        if (v == NULL || v == Py_None) {  /* json_format refuses a null element */
            if (v == NULL) PyErr_SetString(PyExc_RuntimeError, "list changed size");
            else PyErr_SetNone(Defer);
            Py_DECREF(item); Py_DECREF(out);
            return NULL;
        }
        Py_INCREF(v);
        PyObject *r = convert_any(item, v, depth);
        Py_DECREF(v);
        if (r == NULL) { Py_DECREF(item); Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, i, r);
    }
    Py_DECREF(item);
    return out;
}

/* `_integer`: a JSON integer, or a string of ASCII digits with an optional `-`. */
static PyObject *convert_integer(PyObject *value) {
    if (PyLong_CheckExact(value)) return Py_NewRef(value);
    if (PyUnicode_CheckExact(value) && PyUnicode_IS_ASCII(value)) {
        const char *d = (const char *)PyUnicode_1BYTE_DATA(value);
        Py_ssize_t n = PyUnicode_GET_LENGTH(value), i = n > 0 && d[0] == '-';
        if (i == n) return deferred();
        for (Py_ssize_t k = i; k < n; k++)
            if (d[k] < '0' || d[k] > '9') return deferred();
        return PyLong_FromString(d, NULL, 10);
    }
    return deferred();
}

static int hex_digit(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* `_hex_id` when the id is plain hex (as `bytes.fromhex` reads it); NULL without an error
 * when it is not, for the Python converter to read. */
static PyObject *plain_hex_id(PyObject *value) {
    if (!PyUnicode_CheckExact(value) || !PyUnicode_IS_ASCII(value)) return NULL;
    const uint8_t *d = PyUnicode_1BYTE_DATA(value);
    Py_ssize_t n = PyUnicode_GET_LENGTH(value);
    if (n % 2) return NULL;
    uint8_t buf[64];
    if (n / 2 > (Py_ssize_t)sizeof buf) return NULL;
    for (Py_ssize_t i = 0; i < n; i += 2) {
        int hi = hex_digit(d[i]), lo = hex_digit(d[i + 1]);
        if (hi < 0 || lo < 0) return NULL;
        buf[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return PyBytes_FromStringAndSize((const char *)buf, n / 2);
}

/* `_Enum`: a value name of the enum, or an integer if it is open. */
static PyObject *convert_enum(PyObject *conv, PyObject *value) {
    if (PyUnicode_CheckExact(value)) {
        PyObject *numbers = PyObject_GetAttr(conv, str_numbers);
        if (numbers == NULL) return NULL;
        PyObject *number = PyDict_Check(numbers) ? PyDict_GetItemWithError(numbers, value) : NULL;
        Py_XINCREF(number);
        Py_DECREF(numbers);
        if (number != NULL || PyErr_Occurred()) return number;
        return deferred();
    }
    if (PyLong_CheckExact(value)) {
        PyObject *open = PyObject_GetAttr(conv, str_open_enum);
        if (open == NULL) return NULL;
        int yes = PyObject_IsTrue(open);
        Py_DECREF(open);
        if (yes < 0) return NULL;
        if (yes) return Py_NewRef(value);
    }
    return deferred();
}

static PyObject *convert_any(PyObject *conv, PyObject *value, long depth) {
    PyObject *type = (PyObject *)Py_TYPE(conv);
    if (type == MessageType) return convert_message(conv, value, depth);
    if (type == RepeatedType) return convert_repeated(conv, value, depth);
    if (type == EnumType) return convert_enum(conv, value);
    if (conv == integer_fn) return convert_integer(value);
    if (conv == bool_fn) return PyBool_Check(value) ? Py_NewRef(value) : deferred();
    if (conv == hex_id_fn) {
        PyObject *id = plain_hex_id(value);
        if (id != NULL || PyErr_Occurred()) return id;
    }
    PyObject *d = PyLong_FromLong(depth);
    if (d == NULL) return NULL;
    PyObject *args[2] = {value, d};
    PyObject *r = PyObject_Vectorcall(conv, args, 2, NULL);
    Py_DECREF(d);
    return r;
}

static PyObject *convert(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyLong_Check(args[2]) || Defer == NULL) {
        PyErr_SetString(PyExc_TypeError, "convert(converter, value, depth: int), configured");
        return NULL;
    }
    long depth = PyLong_AsLong(args[2]);
    if (depth == -1 && PyErr_Occurred()) return NULL;
    return convert_any(args[0], args[1], depth);
}

static PyObject *configure_otlpjson(PyObject *self, PyObject *args) {
    PyObject *o[7];
    long depth;
    if (!PyArg_ParseTuple(args, "OOOOlOOO:configure_otlpjson", &o[0], &o[1], &o[2], &o[3],
                          &depth, &o[4], &o[5], &o[6]))
        return NULL;
    if (!PyType_Check(o[0]) || !PyType_Check(o[1]) || !PyType_Check(o[2])) {
        PyErr_SetString(PyExc_TypeError, "configure_otlpjson(_Message, _Repeated, _Enum, Defer, "
                        "MAX_DEPTH, _integer, _hex_id, _bool)");
        return NULL;
    }
    PyObject **slots[7] = {&MessageType, &RepeatedType, &EnumType, &Defer, &integer_fn,
                           &hex_id_fn, &bool_fn};
    for (int i = 0; i < 7; i++) { Py_INCREF(o[i]); Py_XSETREF(*slots[i], o[i]); }
    json_max_depth = depth;
    if (str_table == NULL) {
        str_table = PyUnicode_InternFromString("table");
        str_item = PyUnicode_InternFromString("item");
        str_numbers = PyUnicode_InternFromString("numbers");
        str_open_enum = PyUnicode_InternFromString("open_enum");
        if (!str_table || !str_item || !str_numbers || !str_open_enum) return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- OTLP/JSON straight to the wire format: the same converters, the same refusals ----
 * `encode(converter, value, depth)` gives the bytes `request_class(**convert(...))` serialises
 * to, without building the message: each `_Message` also carries `wire` (field name ->
 * (number, descriptor type, mode bits)), and every field is read exactly as `convert_message`
 * and `convert_repeated` read it, then written as upb writes it: fields in number order,
 * implicit-presence scalars left out when zero (a double when its bits are zero), numeric
 * repeated fields packed, a message written whenever set. What the constructor would refuse
 * (an integer out of its field's range, a string that is not valid UTF-8) raises `Defer`. */
#define WIRE_REPEATED 1
#define WIRE_PACKED 2
#define WIRE_PRESENCE 4
static PyObject *str_wire;

typedef struct { uint8_t *data; Py_ssize_t len, cap; } Buf;

static int buf_room(Buf *b, Py_ssize_t more) {
    if (b->len + more <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + more) cap *= 2;
    uint8_t *d = PyMem_Realloc(b->data, cap);
    if (d == NULL) { PyErr_NoMemory(); return -1; }
    b->data = d;
    b->cap = cap;
    return 0;
}

static int put_raw(Buf *b, const void *p, Py_ssize_t n) {
    if (buf_room(b, n) < 0) return -1;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

static int put_varint(Buf *b, uint64_t v) {
    if (buf_room(b, 10) < 0) return -1;
    while (v >= 0x80) { b->data[b->len++] = (uint8_t)(v | 0x80); v >>= 7; }
    b->data[b->len++] = (uint8_t)v;
    return 0;
}

static int put_tag(Buf *b, uint32_t number, int wire_type) {
    return put_varint(b, ((uint64_t)number << 3) | (uint64_t)wire_type);
}

static int put_len(Buf *b, uint32_t number, const void *p, Py_ssize_t n) {
    if (put_tag(b, number, 2) < 0 || put_varint(b, (uint64_t)n) < 0) return -1;
    return put_raw(b, p, n);
}

static int encode_message(PyObject *conv, PyObject *value, long depth, Buf *out);

/* A descriptor type's wire type; -1 for types this path never writes (float, group). */
static int wire_type(int type) {
    switch (type) {
    case 1: case 6: case 16: return 1;  /* double, fixed64, sfixed64 */
    case 7: case 15: return 5;  /* fixed32, sfixed32 */
    case 3: case 4: case 5: case 8: case 13: case 14: case 17: case 18: return 0;
    case 9: case 11: case 12: return 2;
    default: return -1;
    }
}

/* The scalar `v` (what the field's converter gave) of descriptor type `type`: its payload
 * (no tag) appended to `b`, or nothing when it is zero and `skip_zero`; 1 when written. */
static int put_scalar(Buf *b, PyObject *v, int type, int skip_zero) {
    switch (type) {
    case 1: {  /* double */
        if (!PyFloat_CheckExact(v)) goto defer;
        double d = PyFloat_AS_DOUBLE(v);
        uint64_t bits;
        memcpy(&bits, &d, 8);
        if (skip_zero && bits == 0) return 0;
        uint8_t le[8];
        for (int i = 0; i < 8; i++) le[i] = (uint8_t)(bits >> (8 * i));
        return put_raw(b, le, 8) < 0 ? -1 : 1;
    }
    case 8:  /* bool */
        if (!PyBool_Check(v)) goto defer;
        if (skip_zero && v == Py_False) return 0;
        return put_varint(b, v == Py_True) < 0 ? -1 : 1;
    case 4: case 6: {  /* uint64, fixed64 */
        if (!PyLong_Check(v)) goto defer;
        unsigned long long u = PyLong_AsUnsignedLongLong(v);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); goto defer; }
        if (skip_zero && u == 0) return 0;
        if (type == 4) return put_varint(b, u) < 0 ? -1 : 1;
        uint8_t le[8];
        for (int i = 0; i < 8; i++) le[i] = (uint8_t)(u >> (8 * i));
        return put_raw(b, le, 8) < 0 ? -1 : 1;
    }
    case 3: case 5: case 13: case 14: case 15: case 16: case 17: case 18: case 7: {
        if (!PyLong_Check(v)) goto defer;
        int overflow = 0;
        long long s = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (s == -1 && PyErr_Occurred()) return -1;
        if (overflow) goto defer;
        int is32 = type == 5 || type == 14 || type == 15 || type == 17;
        if (is32 && (s < INT32_MIN || s > INT32_MAX)) goto defer;
        if ((type == 13 || type == 7) && (s < 0 || s > (long long)UINT32_MAX)) goto defer;
        if (skip_zero && s == 0) return 0;
        if (type == 7 || type == 15) {  /* fixed32, sfixed32 */
            uint32_t u = (uint32_t)s;
            uint8_t le[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
            return put_raw(b, le, 4) < 0 ? -1 : 1;
        }
        if (type == 16) {  /* sfixed64 */
            uint64_t u = (uint64_t)s;
            uint8_t le[8];
            for (int i = 0; i < 8; i++) le[i] = (uint8_t)(u >> (8 * i));
            return put_raw(b, le, 8) < 0 ? -1 : 1;
        }
        uint64_t u;
        if (type == 17) u = (uint32_t)(((uint32_t)s << 1) ^ (uint32_t)((int32_t)s >> 31));
        else if (type == 18) u = ((uint64_t)s << 1) ^ (uint64_t)(s >> 63);
        else u = (uint64_t)s;  /* int32 and enums sign-extended to ten bytes, as upb does */
        return put_varint(b, u) < 0 ? -1 : 1;
    }
    case 9: {  /* string */
        if (!PyUnicode_Check(v)) goto defer;
        Py_ssize_t n;
        const char *d = PyUnicode_AsUTF8AndSize(v, &n);
        if (d == NULL) { PyErr_Clear(); goto defer; }  /* a lone surrogate */
        if (skip_zero && n == 0) return 0;
        if (put_varint(b, (uint64_t)n) < 0 || put_raw(b, d, n) < 0) return -1;
        return 1;
    }
    case 12: {  /* bytes */
        if (!PyBytes_CheckExact(v)) goto defer;
        Py_ssize_t n = PyBytes_GET_SIZE(v);
        if (skip_zero && n == 0) return 0;
        if (put_varint(b, (uint64_t)n) < 0 || put_raw(b, PyBytes_AS_STRING(v), n) < 0) return -1;
        return 1;
    }
    default:
        goto defer;
    }
defer:
    PyErr_SetNone(Defer);
    return -1;
}

/* What a scalar field's converter gives for `value` (new reference), as `convert_any`. */
static PyObject *scalar_of(PyObject *conv, PyObject *value, long depth) {
    if (conv == Py_None) {
        if (!PyUnicode_CheckExact(value)) return deferred();
        return Py_NewRef(value);
    }
    return convert_any(conv, value, depth);
}

/* One value of a field (number, descriptor type) by its converter, tag included; `presence`:
 * written even when zero. */
static int encode_one(Buf *b, PyObject *conv, PyObject *value, long depth, uint32_t number,
                      int type, int presence) {
    if (type == 11) {
        if (conv == Py_None || (PyObject *)Py_TYPE(conv) != MessageType) {
            PyObject *r = scalar_of(conv, value, depth);  /* `_defer`: raises */
            Py_XDECREF(r);
            if (r != NULL) PyErr_SetNone(Defer);
            return -1;
        }
        /* written in place after a one-byte length, moved up if the length needs more */
        if (put_tag(b, number, 2) < 0 || buf_room(b, 1) < 0) return -1;
        Py_ssize_t at = b->len++;
        if (encode_message(conv, value, depth, b) < 0) return -1;
        uint64_t n = (uint64_t)(b->len - at - 1);
        int k = 1;
        while (n >> (7 * k)) k++;
        if (k > 1) {
            if (buf_room(b, k - 1) < 0) return -1;
            memmove(b->data + at + k, b->data + at + 1, (size_t)n);
            b->len += k - 1;
        }
        for (int i = 0; i < k; i++)
            b->data[at + i] = (uint8_t)(((n >> (7 * i)) & 0x7f) | (i < k - 1 ? 0x80 : 0));
        return 0;
    }
    int wt = wire_type(type);
    if (wt < 0) { PyErr_SetNone(Defer); return -1; }
    PyObject *v = scalar_of(conv, value, depth);
    if (v == NULL) return -1;
    Py_ssize_t before = b->len;
    int written = put_tag(b, number, wt) < 0 ? -1 : put_scalar(b, v, type, !presence);
    Py_DECREF(v);
    if (written == 0) b->len = before;  /* a zero left out: its tag goes too */
    return written < 0 ? -1 : 0;
}

/* A repeated field's list, as `convert_repeated` reads it. */
static int encode_repeated(Buf *b, PyObject *conv, PyObject *value, long depth,
                           uint32_t number, int type, int packed) {
    if ((PyObject *)Py_TYPE(conv) != RepeatedType) {  /* a map: `_defer` raises */
        PyObject *r = convert_any(conv, value, depth);
        Py_XDECREF(r);
        if (r != NULL) PyErr_SetNone(Defer);
        return -1;
    }
    if (!PyList_CheckExact(value)) { PyErr_SetNone(Defer); return -1; }
    PyObject *item = PyObject_GetAttr(conv, str_item);
    if (item == NULL) return -1;
    Buf payload = {0};
    int ok = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
        PyObject *v = PyList_GET_ITEM(value, i);
        if (v == Py_None) { PyErr_SetNone(Defer); ok = -1; break; }
        Py_INCREF(v);
        if (packed && type != 11 && type != 9 && type != 12) {
            PyObject *s = scalar_of(item, v, depth);
            ok = s == NULL ? -1 : put_scalar(&payload, s, type, 0) < 0 ? -1 : 0;
            Py_XDECREF(s);
        } else {
            ok = encode_one(b, item, v, depth, number, type, 1);
        }
        Py_DECREF(v);
        if (ok < 0) break;
    }
    if (ok == 0 && payload.len > 0) ok = put_len(b, number, payload.data, payload.len);
    PyMem_Free(payload.data);
    Py_DECREF(item);
    return ok;
}

typedef struct { uint32_t number; Py_ssize_t start, len; } Written;

static int encode_message(PyObject *conv, PyObject *value, long depth, Buf *out) {
    if (!PyDict_CheckExact(value) || depth > json_max_depth) { PyErr_SetNone(Defer); return -1; }
    PyObject *table = PyObject_GetAttr(conv, str_table), *wire = NULL;
    if (table == NULL) return -1;
    wire = PyObject_GetAttr(conv, str_wire);
    if (wire == NULL) { Py_DECREF(table); return -1; }
    if (!PyDict_CheckExact(table) || !PyDict_CheckExact(wire)) {
        PyErr_SetString(PyExc_TypeError, "_Message.table and .wire must be dicts");
        Py_DECREF(table); Py_DECREF(wire);
        return -1;
    }
    Py_ssize_t size = PyDict_GET_SIZE(value), count = 0, n_oneofs = 0;
    Written few_fields[16], *fields = few_fields;
    PyObject *few_oneofs[16], **oneofs = few_oneofs;  /* borrowed */
    Buf *body = out;  /* fields are written in place, then reordered if they came unordered */
    Py_ssize_t begin = out->len;
    int sorted = 1;
    if (size > 16) {
        fields = PyMem_Malloc(sizeof(Written) * size);
        oneofs = PyMem_Malloc(sizeof(PyObject *) * size);
        if (fields == NULL || oneofs == NULL) { PyErr_NoMemory(); goto fail; }
    }
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    while (PyDict_Next(value, &pos, &key, &item)) {
        PyObject *entry = PyDict_GetItemWithError(table, key);
        if (entry == NULL) {  /* unknown: skipped, unless json_format refuses it */
            if (PyErr_Occurred()) goto fail;
            if (!PyUnicode_Check(key)) goto defer;
            if (!PyUnicode_IS_ASCII(key)
                || (PyUnicode_GET_LENGTH(key) > 0 && PyUnicode_READ_CHAR(key, 0) == '['))
                goto defer;
            continue;
        }
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3) {
            PyErr_SetString(PyExc_TypeError, "a _Message entry is (field, converter, oneof)");
            goto fail;
        }
        PyObject *field = PyTuple_GET_ITEM(entry, 0), *c = PyTuple_GET_ITEM(entry, 1);
        PyObject *oneof = PyTuple_GET_ITEM(entry, 2);
        PyObject *spec = PyDict_GetItemWithError(wire, field);
        if (spec == NULL || !PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != 3) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "a _Message.wire entry is (number, type, mode)");
            goto fail;
        }
        long number = PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
        long type = PyLong_AsLong(PyTuple_GET_ITEM(spec, 1));
        long mode = PyLong_AsLong(PyTuple_GET_ITEM(spec, 2));
        if (PyErr_Occurred()) goto fail;
        for (Py_ssize_t i = 0; i < count; i++)  /* given under both names */
            if (fields[i].number == (uint32_t)number) goto defer;
        if (item == Py_None) continue;
        if (oneof != Py_None) {
            for (Py_ssize_t i = 0; i < n_oneofs; i++) {
                int same = PyObject_RichCompareBool(oneofs[i], oneof, Py_EQ);
                if (same < 0) goto fail;
                if (same) goto defer;
            }
            oneofs[n_oneofs++] = oneof;
        }
        Py_ssize_t start = body->len;
        Py_INCREF(entry);  /* kept while Python code may run */
        Py_INCREF(spec);
        int bad = mode & WIRE_REPEATED
            ? encode_repeated(body, c, item, depth + 1, (uint32_t)number, (int)type,
                              (mode & WIRE_PACKED) != 0)
            : encode_one(body, c, item, depth + 1, (uint32_t)number, (int)type,
                         (mode & WIRE_PRESENCE) != 0);
        Py_DECREF(spec);
        Py_DECREF(entry);
        if (bad < 0) goto fail;
        if (count > 0 && fields[count - 1].number > (uint32_t)number) sorted = 0;
        fields[count++] = (Written){(uint32_t)number, start, body->len - start};
    }
    if (!sorted) {
        for (Py_ssize_t i = 1; i < count; i++) {  /* insertion sort: a message has few fields */
            Written w = fields[i];
            Py_ssize_t j = i;
            while (j > 0 && fields[j - 1].number > w.number) { fields[j] = fields[j - 1]; j--; }
            fields[j] = w;
        }
        Py_ssize_t n = out->len - begin;
        uint8_t *copy = PyMem_Malloc(n ? n : 1);
        if (copy == NULL) { PyErr_NoMemory(); goto fail; }
        memcpy(copy, out->data + begin, n);
        out->len = begin;
        for (Py_ssize_t i = 0; i < count; i++)
            put_raw(out, copy + (fields[i].start - begin), fields[i].len);  /* fits: no growth */
        PyMem_Free(copy);
    }
    if (fields != few_fields) { PyMem_Free(fields); PyMem_Free(oneofs); }
    Py_DECREF(table); Py_DECREF(wire);
    return 0;
defer:
    PyErr_SetNone(Defer);
fail:
    if (fields != few_fields) { PyMem_Free(fields); PyMem_Free(oneofs); }
    Py_DECREF(table); Py_DECREF(wire);
    return -1;
}

static PyObject *encode(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyLong_Check(args[2]) || Defer == NULL) {
        PyErr_SetString(PyExc_TypeError, "encode(converter, value, depth: int), configured");
        return NULL;
    }
    long depth = PyLong_AsLong(args[2]);
    if (depth == -1 && PyErr_Occurred()) return NULL;
    if ((PyObject *)Py_TYPE(args[0]) != MessageType) {
        PyErr_SetString(PyExc_TypeError, "encode takes a _Message converter");
        return NULL;
    }
    if (str_wire == NULL && (str_wire = PyUnicode_InternFromString("wire")) == NULL) return NULL;
    Buf out = {0};
    if (encode_message(args[0], args[1], depth, &out) < 0) { PyMem_Free(out.data); return NULL; }
    PyObject *r = PyBytes_FromStringAndSize((const char *)out.data, out.len);
    PyMem_Free(out.data);
    return r;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(SpanView, Event, RejectedSpan, clean_text, non_finite, note, TOO_DEEP, "
     "DUPLICATE_KEY)"},
    {"configure_json", configure_json, METH_VARARGS,
     "configure_json(NON_FINITE, BIG_INT, DUPLICATE_KEY, note, JSONDecodeError)"},
    {"loads", (PyCFunction)(void (*)(void))loads, METH_FASTCALL,
     "loads(text, fallback) -> the JSON value, as collector.extract.decoding decodes it"},
    {"configure_otlpjson", configure_otlpjson, METH_VARARGS,
     "configure_otlpjson(_Message, _Repeated, _Enum, Defer, MAX_DEPTH, _integer, _hex_id, _bool)"},
    {"convert", (PyCFunction)(void (*)(void))convert, METH_FASTCALL,
     "convert(converter, value, depth) -> what converter(value, depth) gives"},
    {"tool_call", (PyCFunction)(void (*)(void))tool_call, METH_FASTCALL,
     "tool_call(*fields) -> ToolCall, its fields positional in field order"},
    {"configure_calls", configure_calls, METH_VARARGS,
     "configure_calls(ToolCall, number of fields)"},
    {"encode", (PyCFunction)(void (*)(void))encode, METH_FASTCALL,
     "encode(converter, value, depth) -> the request converter(value, depth) builds, serialised"},
    {"views", views, METH_O,
     "views(serialised ExportTraceServiceRequest) -> [(SpanView, raw name) | (None, RejectedSpan)]"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wire", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__wire(void) {
    empty_str = PyUnicode_FromString("");
    if (empty_str == NULL) return NULL;
    return PyModule_Create(&module);
}
