import t from 'tap';
import { ByteLru, CountLru } from '../../src/shared/lru.js';

t.test('count LRU evicts the least recently used entry', async (t) => {
  const lru = new CountLru<string, number>(2);
  lru.set('a', 1);
  lru.set('b', 2);
  t.equal(lru.get('a'), 1, 'touching a makes b the oldest');
  lru.set('c', 3);
  t.equal(lru.get('b'), undefined);
  t.equal(lru.get('a'), 1);
  t.equal(lru.deleteWhere((k) => k === 'a'), 1);
  t.equal(lru.size, 1);
  const off = new CountLru<string, number>(0);
  off.set('x', 1);
  t.equal(off.size, 0, 'capacity 0 caches nothing');
});

t.test('byte LRU keeps its budget and never stores an entry larger than it', async (t) => {
  const lru = new ByteLru<string, string>(100);
  t.equal(lru.set('big', 'x', 101), false, 'larger than the whole budget: never cached');
  t.equal(lru.usedBytes, 0);
  lru.set('a', 'a', 60);
  lru.set('b', 'b', 30);
  lru.get('a');
  lru.set('c', 'c', 40);
  t.equal(lru.has('b'), false, 'the least recently used entry made room');
  t.equal(lru.usedBytes, 100);
  lru.set('a', 'a2', 10);
  t.equal(lru.usedBytes, 50, 'replacing an entry accounts for its new size');
  t.equal(lru.delete('c'), true);
  t.equal(lru.usedBytes, 10);
});
