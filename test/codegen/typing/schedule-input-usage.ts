/**
 * Type-level contract of a generated schedule with `input_from: handler`,
 * checked by `npm run typecheck`: correct use compiles, and every line after
 * a `@ts-expect-error` is misuse that must not compile.
 */

import { archive } from "../fixtures/schedule-input/expected/index.js";

const daily: archive.DailyEuScheduleInputHandler = async ({ tickTime }) => ({ region: "eu", day: tickTime.toISOString().slice(0, 10) });
export const bound = archive.schedulesWith({ dailyEu: daily });

// @ts-expect-error a missing handler
archive.schedulesWith({});

// @ts-expect-error an input the job does not take (region)
export const wrongRegion: archive.DailyEuScheduleInputHandler = () => ({ region: "mars", day: "2026-06-01" });

// @ts-expect-error the tick is a Date, not epoch ms
export const wrongTick: archive.DailyEuScheduleInputHandler = ({ tickTime }) => ({ region: "eu", day: String(tickTime + 1) });
