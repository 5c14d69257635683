/**
 * @module Every operator command, by group. A new group is a file beside
 * this one exporting its commands, and one line here.
 */
import type { Command } from "../registry.js";
import { dashboardCommands } from "./dashboard.js";
import { deadCommands } from "./dead.js";
import { groupsCommands } from "./groups.js";
import { jobsCommands } from "./jobs.js";
import { ownersCommands } from "./owners.js";
import { queueCommands } from "./queue.js";
import { runsCommands } from "./runs.js";
import { scheduleCommands } from "./schedules.js";
import { signalCommands } from "./signal.js";

// biome-ignore format: one line per group, so that adding a group is adding a line
export const COMMANDS: readonly Command[] = [
  ...runsCommands,
  ...signalCommands,
  ...jobsCommands,
  ...groupsCommands,
  ...queueCommands,
  ...deadCommands,
  ...scheduleCommands,
  ...ownersCommands,
  ...dashboardCommands,
];
