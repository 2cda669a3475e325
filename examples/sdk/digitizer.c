/* A readout plugin that emulates a digitizer (include/daqflow/readout_plugin.h): per event and
 * channel (one FED each) a timestamp and a sampled pulse. It gives payloads, which the RU wraps
 * in their FED header and trailer (DAQFLOW_READOUT_PAYLOADS).
 *
 * Payload of FED s, event k: 64-bit word 0 the trigger time in ns (k * 25: one bunch crossing
 * apart), then `samples` 16-bit samples, four to a word, lowest first: a baseline of 200, a
 * triangular pulse (rising over samples 8..11, falling over 12..35) of an amplitude from 500 to
 * 2499, and noise of 0..7 counts, all drawn from splitmix64 of (seed, s, k).
 *
 * config: `samples=N` (a multiple of 4, default 64), `events=N` (then the digitizer is done;
 * default 0: never), `seed=N` (default 1), and two faults to try the RU's checks with:
 * `fail_at=K` (produce fails at event K), `mislabel_at=K` (event K's last fragment is tagged
 * with the next event's number). */
#include <daqflow/readout_plugin.h>

#include "config_text.h"

typedef struct digitizer {
  uint32_t sources;
  uint16_t source_ids[4096];
  uint64_t samples;
  uint64_t events;
  uint64_t seed;
  uint64_t fail_at;     /* + 1; 0: never */
  uint64_t mislabel_at; /* + 1; 0: never */
} digitizer;

int daqflow_readout_abi(void) { return DAQFLOW_READOUT_ABI; }

void* daqflow_readout_init(const daqflow_readout_setup* setup, daqflow_readout_info* info) {
  if (setup->what != DAQFLOW_READOUT_FRAGMENTS) {
    snprintf(setup->error, setup->error_size, "gives FED payloads only (a RU's or the EVM's)");
    return NULL;
  }
  int bad = 0;
  digitizer* d = calloc(1, sizeof(digitizer));
  d->sources = setup->sources;
  memcpy(d->source_ids, setup->source_ids, setup->sources * sizeof(uint16_t));
  d->samples = config_number(setup->config, "samples", 64, &bad);
  d->events = config_number(setup->config, "events", 0, &bad);
  d->seed = config_number(setup->config, "seed", 1, &bad);
  char text[32];
  if (config_value(setup->config, "fail_at", text, sizeof text)) {
    d->fail_at = config_number(setup->config, "fail_at", 0, &bad) + 1;
  }
  if (config_value(setup->config, "mislabel_at", text, sizeof text)) {
    d->mislabel_at = config_number(setup->config, "mislabel_at", 0, &bad) + 1;
  }
  if (bad || d->samples == 0 || d->samples % 4 != 0 || d->samples > 65536) {
    snprintf(setup->error, setup->error_size,
             "config '%s': samples=N (a multiple of 4 up to 65536), events=N, seed=N, fail_at=K, "
             "mislabel_at=K",
             setup->config);
    free(d);
    return NULL;
  }
  info->format = DAQFLOW_READOUT_PAYLOADS;
  info->max_event_bytes = (uint64_t)d->sources * (8 + d->samples * 2);
  return d;
}

/* Sample j of the pulse of amplitude `amplitude`. */
static uint64_t pulse(uint64_t amplitude, uint64_t j) {
  if (j >= 8 && j < 12) return amplitude * (j - 7) / 4;
  if (j >= 12 && j < 36) return amplitude * (36 - j) / 24;
  return 0;
}

int daqflow_readout_produce(void* state, daqflow_readout_request* request) {
  const digitizer* d = state;
  const uint64_t k = request->index;
  if (d->events != 0 && k >= d->events) return DAQFLOW_READOUT_NOT_READY; /* done */
  if (d->fail_at != 0 && k + 1 == d->fail_at) {
    snprintf(request->error, request->error_size, "board lost its clock at event %llu",
             (unsigned long long)k);
    return DAQFLOW_READOUT_FAILED;
  }
  const size_t payload = 8 + d->samples * 2;
  if (payload * d->sources > request->capacity) {
    request->size = payload * d->sources;
    return DAQFLOW_READOUT_NO_ROOM;
  }
  uint64_t* out = request->data;
  for (uint32_t i = 0; i < d->sources; ++i) {
    const uint16_t s = d->source_ids[i];
    const uint64_t drawn = splitmix64(d->seed ^ (uint64_t)s << 40 ^ k);
    const uint64_t amplitude = 500 + drawn % 2000;
    *out++ = k * 25;
    for (uint64_t w = 0; w < d->samples / 4; ++w) {
      uint64_t word = 0;
      for (uint64_t q = 0; q < 4; ++q) {
        const uint64_t j = w * 4 + q;
        const uint64_t sample = 200 + pulse(amplitude, j) + (splitmix64(drawn + j) & 7);
        word |= sample << (16 * q);
      }
      *out++ = word;
    }
    request->fragments[i].source_id = s;
    request->fragments[i].event = request->l1_id;
    request->fragments[i].size = payload;
  }
  if (d->mislabel_at != 0 && k + 1 == d->mislabel_at) {
    request->fragments[d->sources - 1].event = (request->l1_id + 1) & 0xffffff;
  }
  request->size = payload * d->sources;
  request->count = d->sources;
  return DAQFLOW_READOUT_READY;
}

void daqflow_readout_fini(void* state) { free(state); }
