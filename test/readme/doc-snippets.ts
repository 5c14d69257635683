/**
 * @module Code shown in docs/ that has no home in an example: compiled by
 * the type check (never run), so the documentation test can hold the docs'
 * blocks to real, type-correct code.
 */
import { AzureBlobStore, GcsStore } from "taquba";

export function azureStore(): AzureBlobStore {
  const store = new AzureBlobStore({ account: "myaccount", container: "taquba", prefix: "prod" });
  // or: { container, connectionString }, { account, accountKey }, { account, credential: new DefaultAzureCredential() }
  return store;
}

export function gcsStore(): GcsStore {
  const store = new GcsStore({ bucket: "my-bucket", prefix: "taquba/prod" });
  return store;
}
