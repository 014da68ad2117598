/* fake_clock.h: a settable monotonic clock injected into rt_router_new() by core tests. */
#ifndef FAKE_CLOCK_H
#define FAKE_CLOCK_H

#include <stdint.h>

typedef struct fake_clock {
    uint64_t now_us;
} fake_clock;

/* rt_clock_fn: ctx is a fake_clock *. */
uint64_t fake_clock_now(void *ctx);
void fake_clock_advance_ms(fake_clock *c, uint64_t ms);

#endif /* FAKE_CLOCK_H */
