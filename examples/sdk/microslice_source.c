/* A readout plugin that gives a time-slice input its microslices (include/daqflow/
 * readout_plugin.h), as a detector's front end would: each with its start time, its size and
 * the CRC-32C of its content, computed here.
 *
 * Microslice starting at t ns, of equipment e: 8 * (2 + splitmix64(seed ^ e << 48 ^ t) % (size
 * / 4)) bytes: word 0 is t, word w > 0 is splitmix64(t ^ w).
 *
 * config: `size=N` (about the mean content, bytes; default 1024), `intervals=N` (then the source
 * is done; default 0: never), `seed=N` (default 1). */
#include <daqflow/readout_plugin.h>

#include "config_text.h"

typedef struct source {
  uint16_t eq_id;
  uint64_t microslice_ns;
  uint32_t per_interval;
  uint64_t size;
  uint64_t intervals;
  uint64_t seed;
} source;

static uint32_t crc32c(const unsigned char* data, size_t size) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

int daqflow_readout_abi(void) { return DAQFLOW_READOUT_ABI; }

void* daqflow_readout_init(const daqflow_readout_setup* setup, daqflow_readout_info* info) {
  if (setup->what != DAQFLOW_READOUT_MICROSLICES) {
    snprintf(setup->error, setup->error_size, "gives microslices only (a time-slice input's)");
    return NULL;
  }
  int bad = 0;
  source* s = calloc(1, sizeof(source));
  s->eq_id = setup->source_ids[0];
  s->microslice_ns = setup->microslice_ns;
  s->per_interval = setup->microslices_per_interval;
  s->size = config_number(setup->config, "size", 1024, &bad);
  s->intervals = config_number(setup->config, "intervals", 0, &bad);
  s->seed = config_number(setup->config, "seed", 1, &bad);
  if (bad || s->size < 8 || s->size > (1u << 24)) {
    snprintf(setup->error, setup->error_size, "config '%s': size=N (8 to 16 MiB), intervals=N, "
             "seed=N", setup->config);
    free(s);
    return NULL;
  }
  info->max_event_bytes = 8 * (1 + s->size / 4);
  return s;
}

int daqflow_readout_produce(void* state, daqflow_readout_request* request) {
  const source* s = state;
  if (s->intervals != 0 && request->index >= s->intervals) return DAQFLOW_READOUT_NOT_READY;
  unsigned char* out = request->data;
  size_t used = 0;
  for (uint32_t j = 0; j < s->per_interval; ++j) {
    const uint64_t t = (request->index * s->per_interval + j) * s->microslice_ns;
    const uint64_t words = 2 + splitmix64(s->seed ^ (uint64_t)s->eq_id << 48 ^ t) % (s->size / 4);
    if (used + words * 8 > request->capacity) {
      request->size = used + words * 8; /* not all of it: more than the input gave anyway */
      return DAQFLOW_READOUT_NO_ROOM;
    }
    uint64_t* content = (uint64_t*)(out + used);
    content[0] = t;
    for (uint64_t w = 1; w < words; ++w) content[w] = splitmix64(t ^ w);
    daqflow_readout_microslice* m = &request->microslices[j];
    m->start_ns = t;
    m->size = (uint32_t)(words * 8);
    m->crc = crc32c(out + used, words * 8);
    m->flags = DAQFLOW_READOUT_CRC_VALID;
    m->sys_id = 0;
    m->sys_ver = 0;
    used += words * 8;
  }
  request->size = used;
  request->count = s->per_interval;
  return DAQFLOW_READOUT_READY;
}

void daqflow_readout_fini(void* state) { free(state); }
