// ml-logistic-regression ships no types; this declares the part the trainer uses.
declare module 'ml-logistic-regression' {
  import type { Matrix } from 'ml-matrix';

  interface TwoClassClassifier {
    weights: Matrix;
    testScores(features: Matrix): number[];
  }

  export default class LogisticRegression {
    constructor(options?: { numSteps?: number; learningRate?: number });
    numberClasses: number;
    classifiers: TwoClassClassifier[];
    train(features: Matrix, target: Matrix): void;
    predict(features: Matrix): number[];
  }
}
