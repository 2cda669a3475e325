/* daqflow readout plugins: the C ABI through which a shared library supplies a readout unit's data
 * (docs/extending.md): the FED fragments of a RU or of the EVM (whose readout drives the trigger),
 * or the microslices of a time-slice input. Configured as `input: {kind: plugin, library: PATH,
 * config: TEXT}`.
 *
 * A plugin is a shared library that exports
 *
 *   int daqflow_readout_abi(void);
 *       required: returns DAQFLOW_READOUT_ABI (a plugin of another version is refused)
 *   void* daqflow_readout_init(const daqflow_readout_setup* setup, daqflow_readout_info* info);
 *       required: reads setup (its own configuration text among it), fills info and returns its
 *       state; NULL when it cannot start, with the reason written to setup->error
 *   int daqflow_readout_produce(void* state, daqflow_readout_request* request);
 *       required: writes the data of one event (or interval of microslices) without blocking;
 *       returns a DAQFLOW_READOUT_* status
 *   void daqflow_readout_stop(void* state);
 *       optional: stop I/O threads (Halt); produce is not called after it
 *   void daqflow_readout_fini(void* state);
 *       optional: free the state
 *
 * Threading: init, stop and fini run on the application's control thread, produce on its agent
 * thread; never two calls on one state at once. A process may host several applications with a
 * plugin each (even the same library): everything a plugin keeps belongs in its state. A plugin
 * may run I/O threads of its own and hand their data to produce.
 *
 * Fragments (setup->what DAQFLOW_READOUT_FRAGMENTS). Events are asked in order, from 0; each is
 * asked until produce returns READY (or FAILED). The plugin writes the fragments of every source
 * in setup->source_ids, in that order, one after the other into data, and describes each in
 * fragments[i]: its source id and the event number (24-bit L1 id) it carries, which daqflow
 * checks against request->l1_id and the source expected, and its size. With
 * info->format DAQFLOW_READOUT_FED_FRAGMENTS each is a complete FED fragment (header, payload,
 * trailer with its CRC), which daqflow verifies (input.crc_check_every, input.on_error); with
 * DAQFLOW_READOUT_PAYLOADS each is a payload (a multiple of 8 bytes) that daqflow wraps in its
 * FED header and trailer, CRC computed. info->max_event_bytes bounds what one event takes.
 *
 * Microslices (DAQFLOW_READOUT_MICROSLICES). Intervals are asked in order, from 0: interval k is
 * the setup->microslices_per_interval microslices starting at k times that. The plugin writes
 * their contents one after the other into data and describes microslice j in microslices[j]: its
 * start time (checked: interval k's j-th starts at (k * per_interval + j) * microslice_ns), size,
 * flags and CRC-32C (DAQFLOW_READOUT_CRC_VALID set: the plugin computed it; otherwise daqflow
 * does, unless the input's crc is off). info->max_event_bytes bounds one microslice's content.
 *
 * NO_ROOM: the buffer given (request->capacity) is too small; set request->size to the bytes
 * needed and the request comes again with at least that much, once it can be given. */
#ifndef DAQFLOW_READOUT_PLUGIN_H
#define DAQFLOW_READOUT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DAQFLOW_READOUT_ABI 1

/* setup->what */
#define DAQFLOW_READOUT_FRAGMENTS 1
#define DAQFLOW_READOUT_MICROSLICES 2

/* info->format, for fragments */
#define DAQFLOW_READOUT_FED_FRAGMENTS 0
#define DAQFLOW_READOUT_PAYLOADS 1

/* produce's result */
#define DAQFLOW_READOUT_READY 0     /* written: request->size bytes, request->count described */
#define DAQFLOW_READOUT_NOT_READY 1 /* the data has not arrived yet: asked again later */
#define DAQFLOW_READOUT_NO_ROOM 2   /* request->size: the bytes needed */
#define DAQFLOW_READOUT_FAILED 3    /* request->error: why; the application fails with it */

/* daqflow_readout_microslice.flags */
#define DAQFLOW_READOUT_CRC_VALID 0x1

typedef struct daqflow_readout_setup {
  uint32_t abi;               /* DAQFLOW_READOUT_ABI of the daqflow loading the plugin */
  uint32_t what;              /* DAQFLOW_READOUT_FRAGMENTS or DAQFLOW_READOUT_MICROSLICES */
  const char* app;            /* the application's id */
  const char* config;         /* input.config, as written ("" when not set) */
  uint32_t sources;           /* fragments: the RU's FEDs; microslices: 1 */
  const uint16_t* source_ids; /* fragments: their FED ids in order; microslices: the eq_id */
  uint64_t microslice_ns;     /* microslices: the duration of one */
  uint32_t microslices_per_interval;
  char* error; /* init: where to write why it failed (NUL-terminated, at most error_size) */
  size_t error_size;
} daqflow_readout_setup;

typedef struct daqflow_readout_info {
  uint32_t format;        /* fragments: DAQFLOW_READOUT_FED_FRAGMENTS or DAQFLOW_READOUT_PAYLOADS */
  uint64_t max_event_bytes; /* fragments: one event's, all sources; microslices: one content */
} daqflow_readout_info;

typedef struct daqflow_readout_fragment {
  uint32_t source_id; /* the FED the fragment comes from */
  uint32_t event;     /* the L1 id it carries (24 bits) */
  uint64_t size;      /* bytes in data: the whole fragment, or the payload */
} daqflow_readout_fragment;

typedef struct daqflow_readout_microslice {
  uint64_t start_ns; /* its start time (the descriptor's idx) */
  uint32_t size;     /* content bytes in data */
  uint32_t crc;      /* CRC-32C of the content, with DAQFLOW_READOUT_CRC_VALID */
  uint16_t flags;    /* DAQFLOW_READOUT_CRC_VALID; bits 8..15: the detector's own */
  uint8_t sys_id;    /* 0: the input's sys_id */
  uint8_t sys_ver;   /* 0: the input's sys_ver */
} daqflow_readout_microslice;

typedef struct daqflow_readout_request {
  /* Given. */
  uint64_t index; /* the event (fragments) or interval (microslices), from 0 */
  uint32_t l1_id; /* fragments: the L1 id the event's fragments must carry */
  void* data;     /* where to write (8-byte aligned) */
  size_t capacity;
  daqflow_readout_fragment* fragments;     /* fragments: room for setup->sources */
  daqflow_readout_microslice* microslices; /* microslices: room for microslices_per_interval */
  char* error;                             /* FAILED: why (NUL-terminated, at most error_size) */
  size_t error_size;
  /* Returned. */
  size_t size;    /* bytes written (NO_ROOM: bytes needed) */
  uint32_t count; /* fragments or microslices described */
} daqflow_readout_request;

typedef int (*daqflow_readout_abi_fn)(void);
typedef void* (*daqflow_readout_init_fn)(const daqflow_readout_setup* setup,
                                         daqflow_readout_info* info);
typedef int (*daqflow_readout_produce_fn)(void* state, daqflow_readout_request* request);
typedef void (*daqflow_readout_stop_fn)(void* state);
typedef void (*daqflow_readout_fini_fn)(void* state);

#ifdef __cplusplus
}
#endif

#endif
