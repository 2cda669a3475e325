/* A readout plugin that replays a file of FED fragments (include/daqflow/readout_plugin.h).
 *
 * The file holds complete CMS FED fragments one after the other (as `daqflow fedsend --file`
 * reads them), each FED's in event order; every fragment's source id must be one of the RU's
 * FEDs. Event k is the k-th fragment of every FED; the replay ends (NOT_READY from then on) when
 * the FED with the fewest fragments has given its last. Fragments are given as they are, to be
 * verified by the RU (DAQFLOW_READOUT_FED_FRAGMENTS).
 *
 * config: `file=PATH` */
#include <daqflow/readout_plugin.h>
#include <stdarg.h>

#include "config_text.h"

typedef struct fragment {
  size_t offset;
  size_t size;
  uint32_t l1_id;
} fragment;

typedef struct replay {
  unsigned char* data;
  uint32_t sources;
  uint16_t source_ids[4096];
  fragment* fragments[4096]; /* by position: that FED's fragments in file order */
  size_t counts[4096];
  size_t events; /* the fewest fragments of any FED */
} replay;

static void say(char* error, size_t size, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(error, size, format, args);
  va_end(args);
}

static uint64_t load_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

static void release(replay* r) {
  for (uint32_t i = 0; i < r->sources; ++i) free(r->fragments[i]);
  free(r->data);
  free(r);
}

/* Reads the whole file; NULL with the reason in error. */
static unsigned char* read_file(const char* path, size_t* size, char* error, size_t error_size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    say(error, error_size, "cannot open '%s'", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  const long length = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char* data = length > 0 ? malloc((size_t)length) : NULL;
  if (data == NULL || fread(data, 1, (size_t)length, f) != (size_t)length) {
    say(error, error_size, "cannot read '%s' (empty?)", path);
    free(data);
    data = NULL;
  }
  fclose(f);
  *size = (size_t)length;
  return data;
}

/* Walks the fragments from the end of the file (a trailer gives its fragment's length) and files
 * each under its FED; 0 with the reason in error when the file is no sequence of fragments. */
static int index_fragments(replay* r, size_t size, char* error, size_t error_size) {
  size_t end = size;
  size_t capacity = size / 16 + 1;
  for (uint32_t i = 0; i < r->sources; ++i) r->fragments[i] = calloc(capacity, sizeof(fragment));
  while (end > 0) {
    if (end < 16 || end % 8 != 0) {
      say(error, error_size, "no FED fragment ends at byte %zu", end);
      return 0;
    }
    const uint64_t trailer = load_le64(r->data + end - 8);
    const size_t bytes = (size_t)((trailer >> 32) & 0xffffff) * 8;
    if (trailer >> 60 != 0xa || bytes < 16 || bytes > end) {
      say(error, error_size, "no FED trailer at byte %zu", end - 8);
      return 0;
    }
    const uint64_t header = load_le64(r->data + end - bytes);
    const uint16_t source = (uint16_t)((header >> 8) & 0xfff);
    uint32_t at = 0;
    while (at < r->sources && r->source_ids[at] != source) ++at;
    if (header >> 60 != 0x5 || at == r->sources) {
      say(error, error_size, "the fragment at byte %zu is from FED %u, none of this RU's",
          end - bytes, (unsigned)source);
      return 0;
    }
    fragment* f = &r->fragments[at][r->counts[at]++];
    f->offset = end - bytes;
    f->size = bytes;
    f->l1_id = (uint32_t)((header >> 32) & 0xffffff);
    end -= bytes;
  }
  r->events = SIZE_MAX;
  for (uint32_t i = 0; i < r->sources; ++i) {
    /* Walked backwards: put each FED's fragments in file order. */
    for (size_t a = 0, b = r->counts[i]; a + 1 < b; ++a, --b) {
      const fragment t = r->fragments[i][a];
      r->fragments[i][a] = r->fragments[i][b - 1];
      r->fragments[i][b - 1] = t;
    }
    if (r->counts[i] < r->events) r->events = r->counts[i];
  }
  return 1;
}

int daqflow_readout_abi(void) { return DAQFLOW_READOUT_ABI; }

void* daqflow_readout_init(const daqflow_readout_setup* setup, daqflow_readout_info* info) {
  if (setup->what != DAQFLOW_READOUT_FRAGMENTS) {
    say(setup->error, setup->error_size, "gives FED fragments only (a RU's or the EVM's input)");
    return NULL;
  }
  char path[4096];
  if (!config_value(setup->config, "file", path, sizeof path)) {
    say(setup->error, setup->error_size, "config needs file=PATH");
    return NULL;
  }
  replay* r = calloc(1, sizeof(replay));
  r->sources = setup->sources;
  memcpy(r->source_ids, setup->source_ids, setup->sources * sizeof(uint16_t));
  size_t size = 0;
  r->data = read_file(path, &size, setup->error, setup->error_size);
  if (r->data == NULL || !index_fragments(r, size, setup->error, setup->error_size)) {
    release(r);
    return NULL;
  }
  uint64_t largest = 8;
  for (size_t k = 0; k < r->events; ++k) {
    uint64_t event = 0;
    for (uint32_t i = 0; i < r->sources; ++i) event += r->fragments[i][k].size;
    if (event > largest) largest = event;
  }
  info->format = DAQFLOW_READOUT_FED_FRAGMENTS;
  info->max_event_bytes = largest;
  return r;
}

int daqflow_readout_produce(void* state, daqflow_readout_request* request) {
  replay* r = state;
  if (request->index >= r->events) return DAQFLOW_READOUT_NOT_READY; /* the file is done */
  size_t needed = 0;
  for (uint32_t i = 0; i < r->sources; ++i) needed += r->fragments[i][request->index].size;
  if (needed > request->capacity) {
    request->size = needed;
    return DAQFLOW_READOUT_NO_ROOM;
  }
  unsigned char* out = request->data;
  for (uint32_t i = 0; i < r->sources; ++i) {
    const fragment* f = &r->fragments[i][request->index];
    memcpy(out, r->data + f->offset, f->size);
    out += f->size;
    request->fragments[i].source_id = r->source_ids[i];
    request->fragments[i].event = f->l1_id;
    request->fragments[i].size = f->size;
  }
  request->size = needed;
  request->count = r->sources;
  return DAQFLOW_READOUT_READY;
}

void daqflow_readout_fini(void* state) { release(state); }
