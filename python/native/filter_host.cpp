// The Python filter host: a farm processing plugin (include/daqflow/farm_plugin.h) that embeds the
// interpreter the daqflow package is installed into and calls a Python function per event. The
// worker finds this library by asking that interpreter (src/apps/farm/python_filter.hpp), and
// hands over its executable, its module search path, and the module and function to call.
//
// One interpreter per worker process, started at the first Configure and kept to the process's
// end (extension modules such as numpy cannot be loaded into a second one). Each call takes the
// GIL: the workers of one process take turns. The event reaches the function as a read-only
// numpy array over the worker's receive buffer, valid during the call only.

#include <Python.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "daqflow/farm_plugin.h"

namespace {

struct Config {
  std::string executable;
  std::string module;
  std::string function;
  std::vector<std::string> path;
};

struct Host {
  PyObject* function = nullptr;
  PyObject* frombuffer = nullptr;  // numpy.frombuffer
  PyObject* uint8 = nullptr;       // numpy.uint8
  std::string error;
};

// Set when init fails (there is no state to hang it on).
std::string g_init_error;

Config parse(const char* text) {
  Config c;
  std::istringstream in(text != nullptr ? text : "");
  for (std::string line; std::getline(in, line);) {
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    const std::string value = line.substr(eq + 1);
    if (key == "executable") c.executable = value;
    if (key == "module") c.module = value;
    if (key == "function") c.function = value;
    if (key == "path") c.path.push_back(value);
  }
  return c;
}

// The pending Python exception as its traceback's text (cleared).
std::string exception_text() {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  std::string text = "unknown Python error";
  PyObject* tb = PyImport_ImportModule("traceback");
  PyObject* lines = tb != nullptr ? PyObject_CallMethod(tb, "format_exception", "OOO",
                                                        type != nullptr ? type : Py_None,
                                                        value != nullptr ? value : Py_None,
                                                        trace != nullptr ? trace : Py_None)
                                  : nullptr;
  if (lines != nullptr) {
    PyObject* empty = PyUnicode_FromString("");
    PyObject* joined = PyUnicode_Join(empty, lines);
    if (joined != nullptr) {
      const char* utf8 = PyUnicode_AsUTF8(joined);
      if (utf8 != nullptr) text = utf8;
      Py_DECREF(joined);
    }
    Py_XDECREF(empty);
    Py_DECREF(lines);
  }
  PyErr_Clear();
  Py_XDECREF(tb);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// libpython's symbols made global (extension modules such as numpy's expect them there, and the
// worker loaded this library, and with it libpython, with local symbols), and this library kept
// loaded: the interpreter outlives a Halt.
void pin_libraries() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&Py_IsInitialized), &info) != 0 && info.dli_fname != nullptr) {
    (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD | RTLD_NODELETE);
  }
  if (dladdr(reinterpret_cast<void*>(&pin_libraries), &info) != 0 && info.dli_fname != nullptr) {
    (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
}

bool start_interpreter(const Config& c) {
  if (Py_IsInitialized() != 0) return true;
  pin_libraries();
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;  // the executive handles its signals
  config.parse_argv = 0;
  bool ok = true;
  if (!c.executable.empty()) {
    ok = !PyStatus_Exception(
             PyConfig_SetBytesString(&config, &config.program_name, c.executable.c_str())) &&
         !PyStatus_Exception(
             PyConfig_SetBytesString(&config, &config.executable, c.executable.c_str()));
  }
  for (const auto& entry : c.path) {
    if (!ok) break;
    wchar_t* wide = Py_DecodeLocale(entry.c_str(), nullptr);
    ok = wide != nullptr &&
         !PyStatus_Exception(PyWideStringList_Append(&config.module_search_paths, wide));
    PyMem_RawFree(wide);
  }
  config.module_search_paths_set = c.path.empty() ? 0 : 1;
  if (ok) {
    const PyStatus status = Py_InitializeFromConfig(&config);
    if (PyStatus_Exception(status)) {
      g_init_error = std::string("starting the Python interpreter: ") +
                     (status.err_msg != nullptr ? status.err_msg : "failed");
      ok = false;
    }
  } else {
    g_init_error = "starting the Python interpreter: its configuration was refused";
  }
  PyConfig_Clear(&config);
  if (ok) (void)PyEval_SaveThread();  // the GIL is taken per call, from any thread
  return ok;
}

PyObject* attribute_of(const char* module, const char* name) {
  PyObject* m = PyImport_ImportModule(module);
  if (m == nullptr) return nullptr;
  PyObject* a = PyObject_GetAttrString(m, name);
  Py_DECREF(m);
  return a;
}

Host* make_host(const Config& c) {
  auto* host = new Host;
  host->function = attribute_of(c.module.c_str(), c.function.c_str());
  if (host->function != nullptr && PyCallable_Check(host->function) == 0) {
    PyErr_Format(PyExc_TypeError, "%s.%s is not callable", c.module.c_str(), c.function.c_str());
    Py_CLEAR(host->function);
  }
  if (host->function != nullptr) host->frombuffer = attribute_of("numpy", "frombuffer");
  if (host->frombuffer != nullptr) host->uint8 = attribute_of("numpy", "uint8");
  if (host->uint8 == nullptr) {
    g_init_error = exception_text();
    Py_XDECREF(host->function);
    Py_XDECREF(host->frombuffer);
    delete host;
    return nullptr;
  }
  return host;
}

// Reads the function's answer into the decision: True/False (None: False), an int (trigger bits;
// accepted when not zero) or an object with accept, trigger_bits and output (daqflow.Decision).
bool read_answer(PyObject* answer, daqflow_farm_decision* d, std::string& error) {
  if (answer == Py_None || PyBool_Check(answer)) {
    d->accept = answer == Py_True ? 1 : 0;
    d->trigger_bits = d->accept != 0 ? 1 : 0;
    return true;
  }
  if (PyLong_Check(answer)) {
    const unsigned long long bits = PyLong_AsUnsignedLongLongMask(answer);
    d->accept = bits != 0 ? 1 : 0;
    d->trigger_bits = bits;
    return true;
  }
  PyObject* accept = PyObject_GetAttrString(answer, "accept");
  if (accept == nullptr) {
    PyErr_Clear();
    error = "the filter returned a " + std::string(Py_TYPE(answer)->tp_name) +
            ": return a bool, trigger bits (an int) or a daqflow.Decision";
    return false;
  }
  d->accept = PyObject_IsTrue(accept) == 1 ? 1 : 0;
  Py_DECREF(accept);
  PyObject* bits = PyObject_GetAttrString(answer, "trigger_bits");
  d->trigger_bits = bits != nullptr && PyLong_Check(bits) ? PyLong_AsUnsignedLongLongMask(bits)
                                                          : (d->accept != 0 ? 1 : 0);
  Py_XDECREF(bits);
  PyObject* output = PyObject_GetAttrString(answer, "output");
  PyErr_Clear();
  if (output != nullptr && output != Py_None && d->accept != 0) {
    Py_buffer view;
    if (PyObject_GetBuffer(output, &view, PyBUF_SIMPLE) != 0) {
      PyErr_Clear();
      error = "Decision.output is not bytes-like";
      Py_DECREF(output);
      return false;
    }
    const auto size = static_cast<std::size_t>(view.len);
    if (size > d->output_capacity) {
      error = "Decision.output holds " + std::to_string(size) +
              " bytes, more than the worker's output_bytes (" + std::to_string(d->output_capacity) +
              ")";
    } else {
      std::memcpy(d->output, view.buf, size);
      d->output_size = size;
    }
    PyBuffer_Release(&view);
    Py_DECREF(output);
    return error.empty();
  }
  Py_XDECREF(output);
  return true;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int daqflow_farm_abi(void) {
  return DAQFLOW_FARM_ABI;
}

__attribute__((visibility("default"))) void* daqflow_farm_init(const char* text) {
  g_init_error.clear();
  const Config c = parse(text);
  if (c.module.empty() || c.function.empty()) {
    g_init_error = "no module or function in the configuration";
    return nullptr;
  }
  if (!start_interpreter(c)) return nullptr;
  const PyGILState_STATE gil = PyGILState_Ensure();
  Host* host = make_host(c);
  PyGILState_Release(gil);
  return host;
}

__attribute__((visibility("default"))) int daqflow_farm_process(void* state,
                                                                const daqflow_farm_event* event,
                                                                daqflow_farm_decision* decision) {
  auto* host = static_cast<Host*>(state);
  host->error.clear();
  const PyGILState_STATE gil = PyGILState_Ensure();
  PyObject* view = PyMemoryView_FromMemory(static_cast<char*>(const_cast<void*>(event->data)),
                                           static_cast<Py_ssize_t>(event->size), PyBUF_READ);
  PyObject* array = view != nullptr
                        ? PyObject_CallFunctionObjArgs(host->frombuffer, view, host->uint8, nullptr)
                        : nullptr;
  PyObject* number = PyLong_FromUnsignedLongLong(event->number);
  PyObject* flags = PyLong_FromUnsignedLong(event->flags);
  PyObject* answer =
      array != nullptr && number != nullptr && flags != nullptr
          ? PyObject_CallFunctionObjArgs(host->function, array, number, flags, nullptr)
          : nullptr;
  bool ok = answer != nullptr;
  if (!ok) {
    host->error = exception_text();
  } else {
    ok = read_answer(answer, decision, host->error);
  }
  Py_XDECREF(answer);
  Py_XDECREF(flags);
  Py_XDECREF(number);
  Py_XDECREF(array);
  // The bytes are the worker's only during this call: a view the function kept would outlive
  // them, and releasing it refuses then.
  if (view != nullptr && PyObject_CallMethod(view, "release", nullptr) == nullptr) {
    PyErr_Clear();
    if (ok) {
      host->error =
          "the filter kept a reference to the event's array past the call: copy what it keeps";
      ok = false;
    }
  }
  Py_XDECREF(view);
  PyGILState_Release(gil);
  return ok ? 0 : 1;
}

__attribute__((visibility("default"))) void daqflow_farm_fini(void* state) {
  auto* host = static_cast<Host*>(state);
  const PyGILState_STATE gil = PyGILState_Ensure();
  Py_XDECREF(host->function);
  Py_XDECREF(host->frombuffer);
  Py_XDECREF(host->uint8);
  PyGILState_Release(gil);
  delete host;
}

__attribute__((visibility("default"))) const char* daqflow_farm_error(void* state) {
  if (state == nullptr) return g_init_error.c_str();
  return static_cast<Host*>(state)->error.c_str();
}

}  // extern "C"
