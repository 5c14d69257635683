/**
 * @module Vitest setup file: ends the child processes a test started (see
 * tied-children.ts) after that test, and those started outside a test after
 * the file, whatever the outcome, timeouts included.
 */
import { afterAll, afterEach, beforeEach } from "vitest";
import { beginTestScope, endFileScope, endTestScope } from "./tied-children.js";

beforeEach(() => beginTestScope());
afterEach(() => endTestScope());
afterAll(() => endFileScope());
