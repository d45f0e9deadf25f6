/* Placeholder until this command lands; it says so and fails. */
#include "commands.h"

int cmd_dequantize(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return tool_fail(2, "'%s' is not implemented yet", "dequantize");
}
