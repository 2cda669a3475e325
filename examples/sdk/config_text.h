/* The examples' configuration text: `key=value` pairs separated by spaces or newlines (the
 * `config` of `input: {kind: plugin, library, config}`). Header-only, shared by the examples. */
#ifndef DAQFLOW_SDK_EXAMPLE_CONFIG_TEXT_H
#define DAQFLOW_SDK_EXAMPLE_CONFIG_TEXT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies the value of `key` into out (at most size - 1 bytes); 0 when the key is absent. */
static inline int config_value(const char* text, const char* key, char* out, size_t size) {
  const size_t key_length = strlen(key);
  const char* p = text;
  while (p != NULL && *p != '\0') {
    while (*p == ' ' || *p == '\n' || *p == '\t') ++p;
    if (strncmp(p, key, key_length) == 0 && p[key_length] == '=') {
      const char* value = p + key_length + 1;
      size_t n = strcspn(value, " \n\t");
      if (n >= size) n = size - 1;
      memcpy(out, value, n);
      out[n] = '\0';
      return 1;
    }
    p = strpbrk(p, " \n\t");
  }
  return 0;
}

/* The unsigned integer value of `key`, or fallback when absent; -1 in *bad when not a number. */
static inline uint64_t config_number(const char* text, const char* key, uint64_t fallback, int* bad) {
  char value[32];
  if (!config_value(text, key, value, sizeof value)) return fallback;
  char* end = NULL;
  const unsigned long long n = strtoull(value, &end, 10);
  if (end == value || *end != '\0') *bad = 1;
  return (uint64_t)n;
}

/* splitmix64: the examples' deterministic numbers, which the tests compute again. */
static inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

#endif
