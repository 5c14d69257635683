/**
 * @module ts-morph's structure kind numbers, kept here so emitters and the
 * structure printer can build and read structures without loading ts-morph.
 */

/**
 * ts-morph's `StructureKind` values (ts-morph 28), so emitters can build
 * structures without loading ts-morph. The fallback path maps kinds by name
 * onto the installed ts-morph, so a different numbering there is harmless.
 */
export const STRUCTURE_KIND = {
  ImportAttribute: 0,
  CallSignature: 1,
  Class: 2,
  ClassStaticBlock: 3,
  ConstructSignature: 4,
  Constructor: 5,
  ConstructorOverload: 6,
  Decorator: 7,
  Enum: 8,
  EnumMember: 9,
  ExportAssignment: 10,
  ExportDeclaration: 11,
  ExportSpecifier: 12,
  Function: 13,
  FunctionOverload: 14,
  GetAccessor: 15,
  ImportDeclaration: 16,
  ImportSpecifier: 17,
  IndexSignature: 18,
  Interface: 19,
  JsxAttribute: 20,
  JsxSpreadAttribute: 21,
  JsxElement: 22,
  JsxSelfClosingElement: 23,
  JSDoc: 24,
  JSDocTag: 25,
  Method: 26,
  MethodOverload: 27,
  MethodSignature: 28,
  Module: 29,
  Parameter: 30,
  Property: 31,
  PropertyAssignment: 32,
  PropertySignature: 33,
  SetAccessor: 34,
  ShorthandPropertyAssignment: 35,
  SourceFile: 36,
  SpreadAssignment: 37,
  TypeAlias: 38,
  TypeParameter: 39,
  VariableDeclaration: 40,
  VariableStatement: 41,
} as const;
