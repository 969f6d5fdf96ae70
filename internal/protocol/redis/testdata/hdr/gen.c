/* Generates reference.txt (beside it) from Redis 7.0.15's deps/hdr_histogram, its allocation macros defined as
 * malloc's in a header of one's own: printf '#include <stdlib.h>\n#define hdr_malloc malloc\n#define hdr_calloc calloc\n#define hdr_realloc realloc\n#define hdr_free free\n' > m.h; cc -O2 -DHDR_MALLOC_INCLUDE='"m.h"' gen.c hdr_histogram.c -lm && ./a.out > reference.txt
 * Each case: the values recorded (ns, clamped as Redis's updateCommandLatencyHistogram clamps them), then
 * hdr_value_at_percentile for a list of percentiles, then the LATENCY HISTOGRAM walk (fillCommandCDF). */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include "hdr_histogram.h"

static const double pcts[] = {0, 0.1, 1, 25, 50, 75, 90, 99, 99.9, 99.99, 100};

static void emit(int64_t *v, int n) {
    struct hdr_histogram *h;
    hdr_init(1, 1000000000, 2, &h);
    printf("values");
    for (int i = 0; i < n; i++) {
        int64_t x = v[i] < 1 ? 1 : v[i] > 1000000000 ? 1000000000 : v[i];
        hdr_record_value(h, x);
        printf(" %lld", (long long)x);
    }
    printf("\npercentiles");
    for (size_t j = 0; j < sizeof(pcts) / sizeof(pcts[0]); j++)
        printf(" %g=%lld", pcts[j], (long long)hdr_value_at_percentile(h, pcts[j]));
    printf("\ncdf");
    struct hdr_iter iter;
    hdr_iter_log_init(&iter, h, 1024, 2);
    int64_t prev = 0;
    while (hdr_iter_next(&iter)) {
        int64_t micros = iter.highest_equivalent_value / 1000, cum = iter.cumulative_count;
        if (cum > prev) printf(" %lld=%lld", (long long)micros, (long long)cum);
        prev = cum;
    }
    printf("\n");
    hdr_close(h);
}

int main(void) {
    int64_t edges[] = {1, 2, 255, 256, 257, 511, 512, 513, 1000, 1023, 1024, 1025, 1031, 1032, 2047, 2048, 4096,
                       65535, 65536, 999999, 1000000, 536870911, 536870912, 999999999, 1000000000, 2000000000};
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) emit(&edges[i], 1);
    emit(edges, sizeof(edges) / sizeof(edges[0]));
    srand48(739);
    for (int c = 0; c < 12; c++) {
        int n = 1 + (int)(drand48() * (c < 6 ? 20 : 3000));
        int64_t v[3000];
        double mu = 6 + drand48() * 10, sigma = 0.2 + drand48() * 3;
        for (int i = 0; i < n; i++) {
            double u1 = drand48(), u2 = drand48();
            double z = sqrt(-2 * log(u1 + 1e-300)) * cos(2 * M_PI * u2);
            v[i] = (int64_t)exp(mu + sigma * z);
            if (c % 4 == 3) v[i] = (v[i] / 1000) * 1000; /* whole microseconds, as Redis records them */
        }
        emit(v, n);
    }
    return 0;
}
