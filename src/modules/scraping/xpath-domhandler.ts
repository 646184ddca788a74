/**
 * XPath 1.0 for STATIC sources over the DOM cheerio already parsed (domhandler nodes): the `xpath`
 * package evaluates over a thin, lazily built W3C-DOM view of those nodes, so XPath costs no
 * second parse of the page. Names match case-insensitively and without namespace, as browsers do
 * for HTML documents (`isHtml`).
 *
 * The tree is the source's own (htmlparser2, as Crawlee parses it): no implied `<tbody>`, so
 * `//table//tr` works in STATIC and DYNAMIC where `//table/tbody/tr` needs the tag in the source.
 */
import { createRequire } from 'node:module';
import type { AnyNode, Element } from 'cheerio';

/** What an XPath yields: elements, attribute values, or text (text nodes and string results). */
export type XPathHit =
  | { kind: 'element'; element: Element }
  | { kind: 'attr'; element: Element; name: string; value: string }
  /** Text nodes (with their parent element) and string results of expressions like `string(//h1)`. */
  | { kind: 'text'; value: string; element?: Element };

interface XPathResultLike {
  toArray?: () => unknown[];
  stringValue(): string;
}
interface ParsedXPath {
  evaluate(options: { node: unknown; isHtml: boolean }): XPathResultLike;
}
interface XPathInternals {
  parse(expr: string): ParsedXPath;
  XPathContext: { prototype: { extend(props: object): object } };
  XNodeSet: new () => { addArray(nodes: unknown[]): void };
  PathExpr: {
    prototype: {
      evaluate(c: object): unknown;
      applyFilter(c: object, xpc: object): { nodes?: unknown[]; nonNodes?: unknown };
    };
    applyLocationPath(locationPath: unknown, xpc: object, nodes: unknown[] | undefined): unknown[];
  };
}
// Loaded through require: the package's typings pull the whole DOM lib into the program.
const xpath = createRequire(import.meta.url)('xpath') as XPathInternals;

/*
 * Speed (xpath 0.0.34, pinned): the engine copies its evaluation context for every predicate and
 * for every path inside one (`@class` in `.//a[@class="x"]`, once per candidate node) with
 * `new XPathContext()`, which builds a fresh function table each time only to overwrite it with
 * the copied properties. Copying without the constructor gives the same context; field XPaths
 * run ~2.5x faster. (Inheriting instead of copying is slower: lookups through the chain.)
 */
const contextProto = xpath.XPathContext.prototype;
const copyContext = (...sources: object[]): object => Object.assign(Object.create(contextProto) as object, ...sources);
contextProto.extend = function extend(this: object, props: object) {
  return copyContext(this, props);
};
const { PathExpr, XNodeSet } = xpath;
PathExpr.prototype.evaluate = function evaluate(
  this: { locationPath: unknown; applyFilter: XPathInternals['PathExpr']['prototype']['applyFilter'] },
  c: object,
) {
  const xpc = copyContext(c);
  const filterResult = this.applyFilter(c, xpc);
  if ('nonNodes' in filterResult) return filterResult.nonNodes;
  const ns = new XNodeSet();
  ns.addArray(PathExpr.applyLocationPath(this.locationPath, xpc, filterResult.nodes));
  return ns;
};

type DomNode = AnyNode & { type: string; parent: AnyNode | null; prev: AnyNode | null; next: AnyNode | null };
type Parent = DomNode & { children: AnyNode[] };

const NODE_TYPES: Record<string, number> = {
  tag: 1,
  script: 1,
  style: 1,
  text: 3,
  cdata: 4,
  directive: 10,
  comment: 8,
  root: 9,
};
/*
 * The view and the document-order index of a node live on the node under symbols: a WeakMap
 * per node made garbage collection 40% of the time of an XPath page.
 */
const VIEW = Symbol('quarry.xpathView');
const ORDER = Symbol('quarry.documentOrder');
type Annotated = { [VIEW]?: NodeView; [ORDER]?: number };

/** Document order (pre-order index), numbered once per document when the engine first sorts. */
function orderOf(node: AnyNode): number {
  const order = (node as Annotated)[ORDER];
  if (order !== undefined) return order;
  let root = node;
  while (root.parent) root = root.parent;
  let next = 0;
  const stack: AnyNode[] = [root];
  while (stack.length) {
    const n = stack.pop() as AnyNode;
    (n as Annotated)[ORDER] = next++;
    const kids = (n as Parent).children;
    if (kids) for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
  }
  return (node as Annotated)[ORDER] as number;
}

/** The W3C-DOM view of one domhandler node (one view per node, so identity holds for the engine). */
function view(node: AnyNode | null | undefined): NodeView | null {
  if (!node) return null;
  return ((node as Annotated)[VIEW] ??= new NodeView(node as DomNode));
}

class AttrView {
  readonly nodeType = 2;
  readonly prefix = null;
  readonly namespaceURI = null;
  readonly name: string;
  readonly value: string;
  readonly ownerElement: NodeView;
  constructor(name: string, value: string, owner: NodeView) {
    this.name = name;
    this.value = value;
    this.ownerElement = owner;
  }
  get localName() {
    return this.name;
  }
  get nodeName() {
    return this.name;
  }
  get nodeValue() {
    return this.value;
  }
  get parentNode() {
    return null;
  }
}

class NodeView {
  readonly raw: DomNode;
  readonly nodeType: number;
  readonly prefix = null;
  readonly namespaceURI = null;
  #attrs: (AttrView[] & { item(i: number): AttrView }) | undefined;
  constructor(raw: DomNode) {
    this.raw = raw;
    this.nodeType = NODE_TYPES[raw.type] ?? 8;
  }
  get localName(): string | null {
    return this.nodeType === 1 ? (this.raw as Element).name : null;
  }
  get nodeName(): string {
    switch (this.nodeType) {
      case 1:
        return (this.raw as Element).name;
      case 3:
        return '#text';
      case 4:
        return '#cdata-section';
      case 9:
        return '#document';
      case 10:
        return 'html';
      default:
        return '#comment';
    }
  }
  get tagName() {
    return this.nodeName;
  }
  get nodeValue(): string | null {
    return this.nodeType === 3 || this.nodeType === 8 ? (this.raw as unknown as { data: string }).data : null;
  }
  get parentNode() {
    return view(this.raw.parent);
  }
  get firstChild() {
    return view((this.raw as Parent).children?.[0]);
  }
  get lastChild() {
    const c = (this.raw as Parent).children;
    return c ? view(c[c.length - 1]) : null;
  }
  get nextSibling() {
    return view(this.raw.next);
  }
  get previousSibling() {
    return view(this.raw.prev);
  }
  get childNodes(): NodeView[] {
    return ((this.raw as Parent).children ?? []).map((c) => view(c) as NodeView);
  }
  get attributes() {
    if (this.nodeType !== 1) return null;
    if (!this.#attrs) {
      const attribs = (this.raw as Element).attribs;
      const list = Object.keys(attribs).map((name) => new AttrView(name, attribs[name], this));
      this.#attrs = Object.assign(list, { item: (i: number) => list[i] });
    }
    return this.#attrs;
  }
  get ownerDocument(): NodeView | null {
    let n: AnyNode = this.raw;
    while (n.parent) n = n.parent;
    return n === this.raw ? null : view(n);
  }
  get documentElement(): NodeView | null {
    if (this.nodeType !== 9) return null;
    const el = (this.raw as Parent).children.find((c) => NODE_TYPES[(c as DomNode).type] === 1);
    return view(el);
  }
  /** Only the bits the engine reads: 2 (other precedes) and 4 (other follows); attributes follow their element. */
  compareDocumentPosition(other: NodeView | AttrView): number {
    if (other instanceof AttrView)
      return other.ownerElement === this || orderOf(other.ownerElement.raw) > orderOf(this.raw) ? 4 : 2;
    return orderOf(other.raw) < orderOf(this.raw) ? 2 : 4;
  }
  getAttribute(name: string): string | null {
    return this.nodeType === 1 ? ((this.raw as Element).attribs[name.toLowerCase()] ?? null) : null;
  }
  getAttributeNS(_ns: string | null, name: string): string | null {
    return this.getAttribute(name);
  }
  /** For XPath's id(): the first element, in document order, with that id. */
  getElementById(id: string): NodeView | null {
    const stack: AnyNode[] = [...((this.raw as Parent).children ?? [])].reverse();
    while (stack.length) {
      const n = stack.pop() as DomNode;
      if (NODE_TYPES[n.type] !== 1) continue;
      if ((n as unknown as Element).attribs.id === id) return view(n);
      const kids = (n as Parent).children;
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
    }
    return null;
  }
}

const compiled = new Map<string, ParsedXPath>();

/** Throws (like `xpath.parse`) on an expression that does not parse. */
function compile(expr: string): ParsedXPath {
  let parsed = compiled.get(expr);
  if (!parsed) {
    parsed = xpath.parse(expr);
    if (compiled.size > 500) compiled.clear();
    compiled.set(expr, parsed);
  }
  return parsed;
}

/** Evaluates `expr` with `context` (the document or an item element) as the context node. */
export function evaluateXPath(expr: string, context: AnyNode): XPathHit[] {
  const result = compile(expr).evaluate({ node: view(context), isHtml: true });
  if (typeof result.toArray !== 'function') return [{ kind: 'text', value: result.stringValue() }];
  const hits: XPathHit[] = [];
  for (const node of result.toArray()) {
    if (node instanceof AttrView) {
      hits.push({
        kind: 'attr',
        element: node.ownerElement.raw as unknown as Element,
        name: node.name,
        value: node.value,
      });
    } else if (node instanceof NodeView) {
      if (node.nodeType === 1) hits.push({ kind: 'element', element: node.raw as unknown as Element });
      else if (node.nodeType === 3 || node.nodeType === 4) {
        const parent = node.raw.parent;
        const element = parent && NODE_TYPES[(parent as DomNode).type] === 1 ? (parent as Element) : undefined;
        hits.push({
          kind: 'text',
          value: (node.raw as unknown as { data: string }).data,
          ...(element ? { element } : {}),
        });
      } else if (node.nodeType === 9) {
        const root = node.documentElement;
        if (root) hits.push({ kind: 'element', element: root.raw as unknown as Element });
      }
    }
  }
  return hits;
}
