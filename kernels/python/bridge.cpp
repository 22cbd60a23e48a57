// attnprof's Python bridge: an attnprof plugin (include/attnprof/plugin.h) that embeds CPython and
// measures Python callables as kernels: PyTorch's SDPA backends (torch:flash, torch:cudnn,
// torch:efficient, torch:math) and any py:MODULE:FUNCTION. The Python side is attnprof_py.py, next to
// this library; docs/python.md says how to build and use it.
//
// V and O reach Python as wide as attnprof allocated them (their strides say it), so these kernels run a
// value head dim other than hdim (attnprof gives this plugin, by its name "attnprof-python", such points).
// A quantized KV cache's K and V (and an fp8 point's Q, K and V) reach a py: callable as the bytes
// attnprof stores, with their float32 scales shaped to broadcast against them (scale_dict).
// The kernel table: the four torch: entries, plus every py: name in $ATTNPROF_PYTHON_KERNELS (comma
// separated), on the backend in $ATTNPROF_PYTHON_BACKEND (cuda or cpu). attnprof sets both when a
// sweep names such kernels. CPython starts on the first call that needs it, with the interpreter this
// library was built for (ATTNPROF_PYTHON_EXECUTABLE, or $ATTNPROF_PYTHON), so a virtual environment's
// packages (torch) are found. Built where it runs, against that interpreter:
//   g++ -std=c++20 -shared -fPIC -O2 -Iinclude $(python3-config --includes) kernels/python/bridge.cpp \
//       -o attnprof_python.so $(python3-config --ldflags --embed) -DATTNPROF_PYTHON_EXECUTABLE="\"$(command -v python3)\""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <attnprof/plugin.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <string>
#include <vector>

#ifndef ATTNPROF_PYTHON_EXECUTABLE
#define ATTNPROF_PYTHON_EXECUTABLE "python3"
#endif

namespace {

constexpr const char* kModule = "attnprof_py";

struct KernelSpec {
  std::string name;
  std::string backend;  // "cuda" or "cpu"
};

struct Interpreter {
  bool tried = false;
  std::string error;        // why Python could not start
  PyObject* module = nullptr;
  PyObject* unsupported = nullptr;  // attnprof_py.Unsupported
};
Interpreter& interpreter() {
  static Interpreter i;
  return i;
}

void copy_message(const std::string& text, char* out, size_t size) {
  if (out == nullptr || size == 0) return;
  std::snprintf(out, size, "%s", text.c_str());
}

// The pending Python exception as one line (and whether it is attnprof_py.Unsupported); clears it.
std::string take_error(bool* unsupported = nullptr) {
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  if (unsupported) *unsupported = type && interpreter().unsupported && PyErr_GivenExceptionMatches(type, interpreter().unsupported);
  std::string text = "unknown Python error";
  if (value) {
    if (PyObject* s = PyObject_Str(value)) {
      if (const char* c = PyUnicode_AsUTF8(s)) text = c;
      Py_DECREF(s);
    }
    if (!unsupported || !*unsupported) {
      if (PyObject* n = PyObject_GetAttrString(type, "__name__")) {
        if (const char* c = PyUnicode_AsUTF8(n)) text = std::string(c) + ": " + text;
        Py_DECREF(n);
      }
    }
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

std::string this_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&this_library_dir), &info) == 0 || info.dli_fname == nullptr) return ".";
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

// Starts CPython once; false (with interpreter().error) when it cannot.
bool ensure_python() {
  Interpreter& in = interpreter();
  if (in.tried) return in.module != nullptr;
  in.tried = true;
  // attnprof loads plugins with RTLD_LOCAL; extension modules (numpy, torch) resolve CPython's
  // symbols globally, so libpython is promoted to the global namespace first.
  Dl_info python_lib{};
  if (dladdr(reinterpret_cast<void*>(&Py_InitializeFromConfig), &python_lib) != 0 && python_lib.dli_fname)
    dlopen(python_lib.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);

  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;  // the attnprof worker owns SIGINT and SIGTERM
  const char* executable = std::getenv("ATTNPROF_PYTHON");
  PyStatus status = PyConfig_SetBytesString(&config, &config.program_name,
                                            executable && *executable ? executable : ATTNPROF_PYTHON_EXECUTABLE);
  if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) {
    in.error = std::string("cannot start Python: ") + (status.err_msg ? status.err_msg : "unknown error");
    return false;
  }
  // attnprof_py.py lies next to this library.
  PyObject* sys_path = PySys_GetObject("path");
  PyObject* dir = PyUnicode_FromString(this_library_dir().c_str());
  if (sys_path && dir) PyList_Insert(sys_path, 0, dir);
  Py_XDECREF(dir);
  in.module = PyImport_ImportModule(kModule);
  if (in.module == nullptr) {
    in.error = "cannot import " + std::string(kModule) + ": " + take_error();
  } else {
    in.unsupported = PyObject_GetAttrString(in.module, "Unsupported");
  }
  PyEval_SaveThread();  // every entry point takes the GIL for itself
  return in.module != nullptr;
}

// Holds the GIL for one entry point.
struct Gil {
  PyGILState_STATE state = PyGILState_Ensure();
  ~Gil() { PyGILState_Release(state); }
};

const char* dtype_name(int32_t d) {
  switch (d) {
    case ATTNPROF_DTYPE_FP32: return "fp32";
    case ATTNPROF_DTYPE_FP16: return "fp16";
    case ATTNPROF_DTYPE_FP8_E4M3: return "fp8_e4m3";
    default: return "bf16";
  }
}

const char* kv_dtype_name(int32_t d) {
  return d == ATTNPROF_KV_DTYPE_FP8_E4M3 ? "fp8_e4m3" : d == ATTNPROF_KV_DTYPE_INT8 ? "int8" : "none";
}

const char* kv_scale_name(int32_t g) {
  return g == ATTNPROF_KV_SCALE_HEAD ? "head" : g == ATTNPROF_KV_SCALE_TOKEN ? "token" : "tensor";
}

const char* pass_name(int32_t p) { return p == ATTNPROF_PASS_BWD ? "bwd" : p == ATTNPROF_PASS_FWD_BWD ? "fwd_bwd" : "fwd"; }

PyObject* shape_dict(const attnprof_shape& s) {
  return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:O,s:s,s:s,s:s,s:s}", "batch", (long long)s.batch, "heads",
                       (long long)s.heads, "kv_heads", (long long)s.kv_heads, "seq_q", (long long)s.seq_q, "seq_k",
                       (long long)s.seq_k, "hdim", (long long)s.hdim, "causal", s.causal ? Py_True : Py_False,
                       "dtype", dtype_name(s.dtype), "pass", pass_name(s.pass), "kv_dtype", kv_dtype_name(s.kv_dtype),
                       "kv_scale", kv_scale_name(s.kv_scale));
}

PyObject* tensor_dict(const attnprof_tensor& t, long long heads, long long seq, long long hdim, long long batch) {
  return Py_BuildValue("{s:K,s:(LLLL),s:(LLLL)}", "ptr", (unsigned long long)t.data, "shape", batch, heads, seq, hdim,
                       "strides", (long long)t.stride[0], (long long)t.stride[1], (long long)t.stride[2],
                       (long long)t.stride[3]);
}

// The float32 scales of K or V (`of`, `width` wide rows) as a tensor that broadcasts against it
// ([batch, kv_heads, seq_k, width]): [1, 1, 1, 1] per tensor, [1, kv_heads, 1, 1] per kv head, and per
// token [batch, kv_heads, seq_k, 1], whose strides are the rows' (a row's scale sits at its offset / width).
PyObject* scale_dict(attnprof_deviceptr scales, const attnprof_shape& s, const attnprof_tensor& of, long long width) {
  long long shape[4] = {1, 1, 1, 1}, strides[4] = {1, 1, 1, 1};
  if (s.kv_scale == ATTNPROF_KV_SCALE_HEAD) {
    shape[1] = s.kv_heads;
  } else if (s.kv_scale == ATTNPROF_KV_SCALE_TOKEN) {
    shape[0] = s.batch, shape[1] = s.kv_heads, shape[2] = s.seq_k;
    for (int i = 0; i < 3; ++i) strides[i] = (long long)of.stride[i] / width;
  }
  return Py_BuildValue("{s:K,s:(LLLL),s:(LLLL)}", "ptr", (unsigned long long)scales, "shape", shape[0], shape[1],
                       shape[2], shape[3], "strides", strides[0], strides[1], strides[2], strides[3]);
}

int supports(void* user, const attnprof_shape* shape, char* reason, size_t size) {
  const auto& spec = *static_cast<const KernelSpec*>(user);
  if (!ensure_python()) {
    copy_message(interpreter().error, reason, size);
    return 0;
  }
  Gil gil;
  PyObject* dict = shape_dict(*shape);
  PyObject* answer = PyObject_CallMethod(interpreter().module, "supports", "ssO", spec.name.c_str(), spec.backend.c_str(), dict);
  Py_XDECREF(dict);
  if (answer == nullptr) {
    copy_message(take_error(), reason, size);
    return 0;
  }
  const char* text = PyUnicode_Check(answer) ? PyUnicode_AsUTF8(answer) : "supports() returned no string";
  const bool runs = text != nullptr && text[0] == '\0';
  if (!runs) copy_message(text ? text : "?", reason, size);
  Py_DECREF(answer);
  return runs ? 1 : 0;
}

// A prepared call: the Python object whose launch(stream) and write_output(stream) attnprof calls.
struct State {
  PyObject* call = nullptr;
};

int prepare(void* user, const attnprof_shape* shape, const attnprof_tensors* t, void** state, char* error, size_t size) {
  const auto& spec = *static_cast<const KernelSpec*>(user);
  if (!ensure_python()) {
    copy_message(interpreter().error, error, size);
    return 1;
  }
  Gil gil;
  const attnprof_shape& s = *shape;
  // V and O may be narrower or wider than Q and K (a value head dim of its own, core/shape.hpp), which
  // ABI 1's attnprof_shape cannot say: their rows' width is their seq stride (the bridge takes BHSD only).
  const long long hdim_v = t->v.stride[2];
  PyObject* tensors = Py_BuildValue(
      "{s:N,s:N,s:N,s:N,s:s}", "q", tensor_dict(t->q, s.heads, s.seq_q, s.hdim, s.batch), "k",
      tensor_dict(t->k, s.kv_heads, s.seq_k, s.hdim, s.batch), "v", tensor_dict(t->v, s.kv_heads, s.seq_k, hdim_v, s.batch),
      "o", tensor_dict(t->o, s.heads, s.seq_q, t->o.stride[2], s.batch), "element_dtype", dtype_name(t->element_dtype));
  if (tensors && t->d_o.data != 0) {  // a backward point: dO in, dQ, dK, dV out
    const struct {
      const char* key;
      const attnprof_tensor& tensor;
      long long heads, seq, width;
    } grads[] = {{"d_o", t->d_o, s.heads, s.seq_q, t->o.stride[2]},
                 {"dq", t->dq, s.heads, s.seq_q, s.hdim},
                 {"dk", t->dk, s.kv_heads, s.seq_k, s.hdim},
                 {"dv", t->dv, s.kv_heads, s.seq_k, hdim_v}};
    for (const auto& g : grads) {
      PyObject* value = tensor_dict(g.tensor, g.heads, g.seq, g.width, s.batch);
      if (value) PyDict_SetItemString(tensors, g.key, value);
      Py_XDECREF(value);
    }
  }
  if (tensors) {  // quantized inputs (plugin ABI version 4): K and V bytes with their scales, Q E4M3 with one
    if (t->k_scale != 0) {
      PyObject* k_scale = scale_dict(t->k_scale, s, t->k, s.hdim);
      PyObject* v_scale = scale_dict(t->v_scale, s, t->v, hdim_v);
      if (k_scale) PyDict_SetItemString(tensors, "k_scale", k_scale);
      if (v_scale) PyDict_SetItemString(tensors, "v_scale", v_scale);
      Py_XDECREF(k_scale);
      Py_XDECREF(v_scale);
    }
    if (t->q_scale != 0) {
      PyObject* q_scale = Py_BuildValue("{s:K,s:(LLLL),s:(LLLL)}", "ptr", (unsigned long long)t->q_scale, "shape", 1LL,
                                        1LL, 1LL, 1LL, "strides", 1LL, 1LL, 1LL, 1LL);
      if (q_scale) PyDict_SetItemString(tensors, "q_scale", q_scale);
      Py_XDECREF(q_scale);
    }
  }
  PyObject* dict = shape_dict(s);
  if (dict) {
    PyObject* width = PyLong_FromLongLong(hdim_v);
    if (width) PyDict_SetItemString(dict, "hdim_v", width);
    Py_XDECREF(width);
  }
  PyObject* call = tensors && dict ? PyObject_CallMethod(interpreter().module, "prepare", "ssOO", spec.name.c_str(),
                                                         spec.backend.c_str(), dict, tensors)
                                   : nullptr;
  Py_XDECREF(dict);
  Py_XDECREF(tensors);
  if (call == nullptr) {
    bool unsupported = false;
    copy_message(take_error(&unsupported), error, size);
    return unsupported ? ATTNPROF_UNSUPPORTED : 1;
  }
  *state = new State{call};
  return ATTNPROF_OK;
}

int call_method(void* state, const char* method, attnprof_stream stream, char* error, size_t size) {
  auto* st = static_cast<State*>(state);
  Gil gil;
  PyObject* done = PyObject_CallMethod(st->call, method, "K", (unsigned long long)reinterpret_cast<uintptr_t>(stream));
  if (done == nullptr) {
    copy_message(take_error(), error, size);
    return 1;
  }
  Py_DECREF(done);
  return ATTNPROF_OK;
}

int launch(void* state, attnprof_stream stream, char* error, size_t size) {
  return call_method(state, "launch", stream, error, size);
}

int write_output(void* state, attnprof_stream stream, char* error, size_t size) {
  return call_method(state, "write_output", stream, error, size);
}

void release(void*, void* state) {
  auto* st = static_cast<State*>(state);
  {
    Gil gil;
    Py_XDECREF(st->call);
  }
  delete st;
}

// The table: built once, from the environment, and alive as long as the library.
struct Table {
  std::deque<KernelSpec> specs;
  std::deque<std::string> descriptions;
  std::vector<attnprof_kernel> kernels;
  attnprof_plugin plugin{};
};

void add_kernel(Table& table, const std::string& name, const std::string& backend, const std::string& description) {
  table.specs.push_back({name, backend});
  table.descriptions.push_back(description);
  attnprof_kernel k{};
  k.struct_size = sizeof(attnprof_kernel);
  k.name = table.specs.back().name.c_str();
  k.description = table.descriptions.back().c_str();
  k.backend = backend == "cpu" ? ATTNPROF_BACKEND_CPU : ATTNPROF_BACKEND_CUDA;
  k.cost_model = ATTNPROF_COST_ATTENTION_FWD;
  k.layouts = ATTNPROF_LAYOUT_BHSD;
  // Pure; not graph-capturable by attnprof (the module replays torch: calls from its own CUDA graph,
  // and py: callables may allocate in every call); no LSE (PyTorch's SDPA does not return it). V and O
  // may be narrower or wider than Q and K: the module reads their widths from the tensors. Every kernel
  // is given backward points: PyTorch's backends run the backward through autograd, a py: callable
  // through its .backward or its output's autograd graph (attnprof_py.py refuses the point for one
  // with neither). PyTorch's backends take no quantized input; a py: callable is given quantized K and
  // V (fp8 Q, K and V) when it takes their scales as keyword parameters (attnprof_py.py refuses such a
  // point for one that does not).
  k.flags = ATTNPROF_KERNEL_PURE | ATTNPROF_KERNEL_DISTINCT_HDIM_V | ATTNPROF_KERNEL_RUNS_BACKWARD;
  if (!name.starts_with("torch:")) k.flags |= ATTNPROF_KERNEL_READS_QUANTIZED_KV | ATTNPROF_KERNEL_RUNS_FP8;
  k.user = &table.specs.back();
  k.supports = supports;
  k.prepare = prepare;
  k.launch = launch;
  k.release = release;
  k.write_output = write_output;
  table.kernels.push_back(k);
}

void build(Table& t) {
  for (const char* which : {"flash", "cudnn", "efficient", "math"})
    add_kernel(t, std::string("torch:") + which, "cuda",
               std::string("PyTorch scaled_dot_product_attention, ") + which + " backend (through attnprof's Python bridge)");
  const char* backend_env = std::getenv("ATTNPROF_PYTHON_BACKEND");
  const std::string backend = backend_env && std::string(backend_env) == "cpu" ? "cpu" : "cuda";
  const char* names = std::getenv("ATTNPROF_PYTHON_KERNELS");
  const std::string list = names ? names : "";
  size_t start = 0;
  while (start < list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, comma - start);
    if (name.starts_with("py:"))
      add_kernel(t, name, backend, "the Python callable " + name.substr(3) + " (through attnprof's Python bridge)");
    start = comma + 1;
  }
  t.plugin.abi_version = ATTNPROF_PLUGIN_ABI_VERSION;
  t.plugin.struct_size = sizeof(attnprof_plugin);
  t.plugin.kernel_struct_size = sizeof(attnprof_kernel);
  t.plugin.kernel_count = static_cast<uint32_t>(t.kernels.size());
  t.plugin.name = "attnprof-python";
  t.plugin.version = "1.0 (Python " PY_VERSION ")";
  t.plugin.kernels = t.kernels.data();
}

// Built in place, once: the kernel entries point into the table's own strings.
const Table& table() {
  static Table t;
  if (t.kernels.empty()) build(t);
  return t;
}

}  // namespace

extern "C" ATTNPROF_PLUGIN_EXPORT const attnprof_plugin* attnprof_plugin_entry(void) { return &table().plugin; }
