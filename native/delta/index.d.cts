export declare function patch(oldPath: string, patchPath: string, outPath: string): number;
export declare function verify(oldPath: string, patchPath: string, expectedPath: string): boolean;
export declare function diff(oldPath: string, newPath: string, patchPath: string): number;
export declare const programPath: string;
