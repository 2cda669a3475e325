/* An example filter-farm plugin (daqflow/farm_plugin.h, docs/farm.md): it reads every byte of the
 * event, accepts one event in `every` (by the checksum of its bytes, so the choice depends on
 * the data), sets trigger bit 0 for those and bit 1 when bit 16 of the checksum is set, and
 * writes as output the event number, its size, its checksum, then the event's first `keep`
 * bytes.
 *
 *   worker: {processing: {kind: plugin, library: build/lib/libdaqflow_farm_select.so,
 *                         config: "every=200 keep=1024"}}
 *
 * farm_select.py beside it makes the same selection in Python.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daqflow/farm_plugin.h"

struct select_state {
  unsigned long every;
  unsigned long keep;
};

int daqflow_farm_abi(void) { return DAQFLOW_FARM_ABI; }

void* daqflow_farm_init(const char* config) {
  struct select_state* s = malloc(sizeof *s);
  if (s == NULL) return NULL;
  s->every = 200;
  s->keep = 1024;
  const char* p = config;
  while (p != NULL && *p != '\0') {
    unsigned long value = 0;
    char key[16];
    int used = 0;
    if (sscanf(p, " %15[a-z]=%lu%n", key, &value, &used) != 2) break;
    if (strcmp(key, "every") == 0 && value > 0) {
      s->every = value;
    } else if (strcmp(key, "keep") == 0) {
      s->keep = value;
    } else {
      free(s);
      return NULL; /* an unknown key: the worker fails to configure, naming the text */
    }
    p += used;
  }
  return s;
}

int daqflow_farm_process(void* state, const daqflow_farm_event* event,
                         daqflow_farm_decision* decision) {
  const struct select_state* s = state;
  const unsigned char* bytes = event->data;
  uint64_t sum = 0;
  for (size_t i = 0; i < event->size; ++i) sum = sum * 31 + bytes[i];
  if (sum % s->every != 0) return 0; /* rejected: the worker zeroed the decision */
  decision->accept = 1;
  decision->trigger_bits = 1u | (((sum >> 16) & 1u) << 1);
  const size_t keep = event->size < s->keep ? event->size : s->keep;
  const size_t need = 24 + keep;
  if (decision->output_capacity < need) return 1; /* configured with too little room */
  unsigned char* out = decision->output;
  memcpy(out, &event->number, 8);
  const uint64_t size = event->size;
  memcpy(out + 8, &size, 8);
  memcpy(out + 16, &sum, 8);
  memcpy(out + 24, bytes, keep);
  decision->output_size = need;
  return 0;
}

void daqflow_farm_fini(void* state) { free(state); }
