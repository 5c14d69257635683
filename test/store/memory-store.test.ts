import { MemoryStore } from "taquba";
import { describeStoreConformance } from "./conformance.js";

describeStoreConformance("MemoryStore", { makeStore: () => new MemoryStore(), paginationKeys: 1100 });
