/* fake_clock.c */
#include "fake_clock.h"

uint64_t fake_clock_now(void *ctx)
{
    return ((fake_clock *)ctx)->now_us;
}

void fake_clock_advance_ms(fake_clock *c, uint64_t ms)
{
    c->now_us += ms * 1000;
}
