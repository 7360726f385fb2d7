#include "err.h"

#include <stdarg.h>
#include <stdio.h>

struct err_row {
    int val;
    const char *code, *msg;
};

static const struct err_row rows[] = {
#define LCN_ERR_ROW(name, val, code, msg) {(val), (code), (msg)},
    LCN_ERR_MAP(LCN_ERR_ROW)
#undef LCN_ERR_ROW
};

static const struct err_row *find(int err)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].val == err)
            return &rows[i];
    return NULL;
}

const char *lcn_strerror(int err)
{
    const struct err_row *r = find(err);
    return r ? r->msg : "unknown error";
}

const char *lcn_errcode(int err)
{
    const struct err_row *r = find(err);
    return r ? r->code : "unknown";
}

void lcn_errmsg(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
