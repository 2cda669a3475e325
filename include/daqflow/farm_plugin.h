/* daqflow filter-farm processing plugins: the C ABI a worker loads by path (docs/farm.md).
 *
 * A plugin is a shared library that exports
 *
 *   int daqflow_farm_abi(void);                       required: returns DAQFLOW_FARM_ABI
 *   void* daqflow_farm_init(const char* config);      optional: the worker's plugin_config text;
 *                                                     returns the plugin's state (NULL: failed,
 *                                                     and the worker fails to configure)
 *   int daqflow_farm_process(void* state, const daqflow_farm_event* event,
 *                            daqflow_farm_decision* decision);
 *                                                     required: decides on one event; 0 when
 *                                                     done, anything else fails the worker
 *   void daqflow_farm_fini(void* state);              optional: at Halt
 *   const char* daqflow_farm_error(void* state);      optional: why the last call failed (init
 *                                                     with state NULL, or process), in words the
 *                                                     worker logs and fails with; valid until the
 *                                                     next call
 *
 * daqflow_farm_process() runs on the worker's thread, one event at a time; the event's bytes are
 * valid only during the call. To accept, set accept to 1, trigger_bits to the selections that
 * fired, and write at most output_capacity bytes of processed data to output, their count to
 * output_size. The worker zeroes the decision before each call. */
#ifndef DAQFLOW_FARM_PLUGIN_H
#define DAQFLOW_FARM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DAQFLOW_FARM_ABI 1

typedef struct daqflow_farm_event {
  uint64_t number;   /* event number */
  uint32_t flags;    /* 1: incomplete (a source's data missing), 2: corrupted */
  const void* data;  /* the built event */
  size_t size;
} daqflow_farm_event;

typedef struct daqflow_farm_decision {
  int accept;             /* 1: keep the event */
  uint64_t trigger_bits;  /* the selections that fired; streams are chosen by them */
  void* output;           /* room for the processed data of an accepted event */
  size_t output_capacity;
  size_t output_size; /* bytes written to output */
} daqflow_farm_decision;

typedef int (*daqflow_farm_abi_fn)(void);
typedef void* (*daqflow_farm_init_fn)(const char* config);
typedef int (*daqflow_farm_process_fn)(void* state, const daqflow_farm_event* event,
                                       daqflow_farm_decision* decision);
typedef void (*daqflow_farm_fini_fn)(void* state);
typedef const char* (*daqflow_farm_error_fn)(void* state);

#ifdef __cplusplus
}
#endif

#endif
