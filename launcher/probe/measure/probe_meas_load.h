/* probe_meas_load: the sections of a measurement document, for probe_meas.c (which owns the record). */
#ifndef PLAUNCH_PROBE_MEAS_LOAD_H
#define PLAUNCH_PROBE_MEAS_LOAD_H

/* Each reads one section into the record's memory (allocating what it holds, freed by probe_meas_destroy);
 * -1 with ld->err naming the file, the field's path and what was expected. */

#include "launcher/probe/measure/probe_json.h"
#include "launcher/probe/measure/probe_meas.h"

/* config; c->schema must be set (it decides the defaults of ops, dtype and timing). */
int probe_meas_load_config(struct probe_jctx *ld, const json_t *root, struct probe_config *c);
int probe_meas_load_gpu(struct probe_jctx *ld, const json_t *o, const char *path, struct probe_gpu *g);
int probe_meas_load_p2p(struct probe_jctx *ld, const json_t *o, const char *path, struct probe_p2p *p);
int probe_meas_load_sweep(struct probe_jctx *ld, const json_t *o, const char *path, struct probe_sweep *s);
int probe_meas_load_step(struct probe_jctx *ld, const json_t *o, const char *path, struct probe_step *st);
/* root.pairwise (absent or null: no matrix). */
int probe_meas_load_pairwise(struct probe_jctx *ld, const json_t *root, struct probe_meas *m);

#endif
