// Reached only through require() on a Node.js without require(esm) (older
// than 20.19 or 22.12): taquba is an ES module package.
throw new Error(
  `taquba is an ES module and this Node.js (${process.version}) cannot require() ES modules. ` +
    "Use Node.js >= 20.19 or >= 22.12, where require('taquba') loads it, or import it: `const taquba = await import(\"taquba\")`.",
);
