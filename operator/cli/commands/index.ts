/**
 * @module Every operator command, by group. A new group is a file beside
 * this one exporting its commands, and one line here.
 */
import type { Command } from "../registry.js";
import { ownersCommands } from "./owners.js";
import { queueCommands } from "./queue.js";

export const COMMANDS: readonly Command[] = [...queueCommands, ...ownersCommands];
