/*
 * backend_select.h — which backend an engine computes on, from the name a
 * host asks for ("auto", "cpu", "cuda"; adil_engine_params.backend).
 */
#ifndef ADIL_BACKEND_SELECT_H
#define ADIL_BACKEND_SELECT_H

#include "adil/adil.h"

#include <stddef.h>

/* The backends built into this engine, as adil_component_info.backends
 * lists them: "cpu", or "cpu,cuda" in a build with ADIL_CUDA. */
const char *adil_backends_built(void);

/* Writes the backend that serves `requested` (NULL = "auto") into
 * out[0 .. cap).  "auto" is the CPU until the CUDA forward pass exists, so
 * it costs no driver probe.  "cuda" fails with ADIL_STATUS_CAPABILITY and a
 * message saying why: built without CUDA, no driver or device (the probe's
 * reason), or, with a device present, that the forward pass on it is not
 * implemented: the engine never runs the CPU under the name "cuda".  Any
 * thread. */
adil_status adil_backend_select(const char *requested, char *out, size_t cap);

#endif /* ADIL_BACKEND_SELECT_H */
