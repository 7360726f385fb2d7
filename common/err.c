#include "err.h"

const char *lcn_strerror(int err)
{
    switch (err) {
#define LCN_ERR_MSG(name, val, code, msg)                                                          \
    case (val):                                                                                    \
        return msg;
        LCN_ERR_MAP(LCN_ERR_MSG)
#undef LCN_ERR_MSG
    }
    return "unknown error";
}

const char *lcn_errcode(int err)
{
    switch (err) {
#define LCN_ERR_CODE(name, val, code, msg)                                                         \
    case (val):                                                                                    \
        return code;
        LCN_ERR_MAP(LCN_ERR_CODE)
#undef LCN_ERR_CODE
    }
    return "unknown";
}
