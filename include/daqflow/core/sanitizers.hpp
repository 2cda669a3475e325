#pragma once

// Whether this translation unit is built under a sanitizer, for the few places that must act
// differently there: DAQFLOW_UNDER_ASAN and DAQFLOW_UNDER_TSAN are 1 or 0. GCC defines
// __SANITIZE_ADDRESS__ and __SANITIZE_THREAD__; clang 14 answers only __has_feature.

#if defined(__SANITIZE_ADDRESS__)
#define DAQFLOW_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DAQFLOW_UNDER_ASAN 1
#endif
#endif
#ifndef DAQFLOW_UNDER_ASAN
#define DAQFLOW_UNDER_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define DAQFLOW_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DAQFLOW_UNDER_TSAN 1
#endif
#endif
#ifndef DAQFLOW_UNDER_TSAN
#define DAQFLOW_UNDER_TSAN 0
#endif
